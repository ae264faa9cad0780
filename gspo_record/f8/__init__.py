"""Finding 8's room: the template ``f8_dense.md`` (rendered to ``docs/f8_dense.md``) and the modules that
compute it: dense."""

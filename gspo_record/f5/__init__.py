"""Finding 5's room: the template ``f5_precision.md`` (rendered to ``docs/f5_precision.md``) and the modules that
compute it: precision."""

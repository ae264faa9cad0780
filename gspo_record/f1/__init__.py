"""Finding 1's room: the template ``f1_clipping.md`` (rendered to ``docs/f1_clipping.md``) and the modules that
compute it: clipping."""

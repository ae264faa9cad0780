"""Finding 6's room: the template ``f6_variance.md`` (rendered to ``docs/f6_variance.md``) and the modules that
compute it: variance."""

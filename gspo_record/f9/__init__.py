"""Finding 9's room: the template ``f9_precursors.md`` (rendered to ``docs/f9_precursors.md``) and the modules that
compute it: precursors."""

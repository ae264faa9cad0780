"""Finding 11's room: the template ``f11_successors.md`` (rendered to ``docs/f11_successors.md``) and the modules that
compute it: corrections, regimes, successors."""

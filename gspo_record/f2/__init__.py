"""Finding 2's room: the template ``f2_collapse.md`` (rendered to ``docs/f2_collapse.md``) and the modules that
compute it: candidate, collapse, late, mechanism, remeasure, search, spikes, ten."""

"""Finding 4's room: the template ``f4_replay.md`` (rendered to ``docs/f4_replay.md``) and the modules that
compute it: replay."""

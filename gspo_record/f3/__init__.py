"""Finding 3's room: the template ``f3_volatility.md`` (rendered to ``docs/f3_volatility.md``) and the modules that
compute it: volatility."""

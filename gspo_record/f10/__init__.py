"""Finding 10's room: the template ``f10_why.md`` (rendered to ``docs/f10_why.md``) and the modules that
compute it: adam, branch, dual, fresh, plots, revert, runs, sgd, ten, why."""

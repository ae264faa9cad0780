"""Finding 7's room: the template ``f7_token_adv.md`` (rendered to ``docs/f7_token_adv.md``) and the modules that
compute it: token_adv."""

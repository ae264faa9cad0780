"""Finding 12: stale rollouts (issue 38)."""

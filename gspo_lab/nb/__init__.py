"""The notebook machinery, kept apart from the math: parameter tiers, headless execution, results, the report.

params   the notebooks and their parameter tiers (interactive / smoke / full)
results  claims + numbers -> JSON (papermill regression tests, the report)
run      headless execution through papermill with the nbclient stall fixed; ``python -m gspo_lab.nb.run``
report   the main job's HTML report over a run folder
"""

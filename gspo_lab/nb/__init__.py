"""The notebook machinery, kept apart from the math: parameter tiers, headless execution, results, the report.

params   the notebooks and their parameter tiers (interactive / smoke / full)
results  claims + numbers -> JSON (papermill regression tests, the report)
run      headless execution through papermill; ``python -m gspo_lab.nb.run``
engine   the papermill engine with the nbclient stall fixed (jupyter/nbclient#312)
report   the main job's HTML report over a run folder
"""

"""The notebook machinery, kept apart from the math: parameter tiers, headless execution, results, the book.

params   the notebooks and their parameter tiers (interactive / smoke / full)
results  claims + numbers -> JSON (papermill regression tests, the book's claims dashboard)
run      headless execution through papermill; ``python -m gspo_lab.nb.run`` (the main job)
engine   the papermill engine with the nbclient stall fixed (jupyter/nbclient#312)
frames   widget views -> the frames their Output widgets stored (pages read without a kernel)
book     the main job's static site (Sphinx + myst-nb) over a run folder
"""

"""The exercise notebooks are committed without outputs, so nbval would only prove that they run;
``tests/test_exercises.py`` does that (and checks they match their curated notebooks). Leaving
them out of nbval's collection keeps the notebook suite from running them twice."""

collect_ignore_glob = ["*.ipynb"]

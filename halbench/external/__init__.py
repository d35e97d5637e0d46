"""Tasks built outside halbench: any local causal LM folder with a cases file, described by ``task.yaml``.

An external task needs no generator recipe. Its ``task.yaml`` (``kind: external``) names a model folder
and a cases file of one of two formats: token-level cases (``prompt_ids``, ``target_ids`` and, for
localization metrics, ``causes``), or text prompts with their hallucinated answers, HALoGEN style
(scored by the ground-truth-free metrics only). The first use derives a standard task instance from it
(:mod:`halbench.external.instance`), so the sweep, ``tasks verify`` and every method run unchanged.
"""

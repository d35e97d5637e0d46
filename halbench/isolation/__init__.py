"""Running untrusted methods isolated: a sandboxed worker process that sees only public data.

- :mod:`~halbench.isolation.protocol`: the framing (JSON headers and raw numeric buffers, never pickle);
- :mod:`~halbench.isolation.proxy`: the Scorer as the worker sees it, and the harness's answers;
- :mod:`~halbench.isolation.worker`: the worker process itself;
- :mod:`~halbench.isolation.sandbox`: starting it under bubblewrap (or, trusted, as a plain subprocess);
- :mod:`~halbench.isolation.method`: :class:`IsolatedMethod`, the harness's side, a :class:`Method` like any other.

Nothing is imported here, so the worker loads only what it needs.
"""

"""Outside submissions: a folder with ``submission.yaml`` and ``method.py``, run sandboxed and verified.

A submission's results live in its own ``results/`` folder, in the same layout as the benchmark's
``results/``, so one reader serves both; the verifier's record lives outside it, in ``verifications/``.
"""

from halbench.submissions.loader import Submission, discover_submissions, load_submission
from halbench.submissions.spec import SubmissionError, SubmissionSpec, validate_slug

__all__ = [
    "Submission",
    "SubmissionError",
    "SubmissionSpec",
    "discover_submissions",
    "load_submission",
    "validate_slug",
]

"""Outside submissions: a folder with ``submission.yaml`` and ``method.py``, run and verified like built-ins.

A submission's results live in its own ``results/`` folder, in the same layout
as the benchmark's ``results/``, so one reader serves both; ``verification.json``
records that a re-run reproduced them.
"""

from halbench.submissions.loader import Submission, discover_submissions, load_submission
from halbench.submissions.spec import SubmissionError, SubmissionSpec, validate_slug
from halbench.submissions.submit import run_submission
from halbench.submissions.verify import VerificationReport, verification_status, verify_submission

__all__ = [
    "Submission",
    "SubmissionError",
    "SubmissionSpec",
    "VerificationReport",
    "discover_submissions",
    "load_submission",
    "run_submission",
    "validate_slug",
    "verification_status",
    "verify_submission",
]

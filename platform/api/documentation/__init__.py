"""What the OpenAPI schema says the API answers where no model serializer does: the shapes of the
boards, progress, results and errors (serializers used for the schema only), and the hook that adds
the error answers every operation can give. tests/platform/api/test_schema.py checks live answers
against the schema, so a change of shape here or in the code fails there.

The views read these names from here (`from api import documentation as shapes`); each lives in
one module: ``errors.py``, ``parameters.py``, ``exchanges.py`` (sign-in, uploads), ``boards.py``,
``results.py`` (a submission's progress and results), ``campaign_detail.py``, ``base.py``. The
schema's view, which draws it once per process, is ``view.py`` (imported by api/urls.py alone)."""

from api.documentation.boards import CaptionerBoard, CaptionScores, Comparison, MetricBoard
from api.documentation.campaign_detail import CampaignDetail
from api.documentation.errors import Problem, add_error_responses, error_components
from api.documentation.exchanges import (
    Credentials,
    DatasetImported,
    DatasetUpload,
    DuplicateSubmission,
    ItemPage,
    Token,
    Visibility,
)
from api.documentation.parameters import (
    CAPTIONER_BOARD_PARAMETERS,
    CORRELATION_PARAMETERS,
    METRIC_BOARD_PARAMETERS,
    SCORE_PARAMETERS,
    query,
)
from api.documentation.results import Progress, Results

__all__ = [
    "CAPTIONER_BOARD_PARAMETERS",
    "CORRELATION_PARAMETERS",
    "METRIC_BOARD_PARAMETERS",
    "SCORE_PARAMETERS",
    "CampaignDetail",
    "CaptionScores",
    "CaptionerBoard",
    "Comparison",
    "Credentials",
    "DatasetImported",
    "DatasetUpload",
    "DuplicateSubmission",
    "ItemPage",
    "MetricBoard",
    "Problem",
    "Progress",
    "Results",
    "Token",
    "Visibility",
    "add_error_responses",
    "error_components",
    "query",
]

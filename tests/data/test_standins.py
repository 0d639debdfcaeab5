"""Stand-ins for the unreachable datasets have their schema and a learnable label; the real ids keep their path."""

from __future__ import annotations

import numpy as np
import pytest

from dpvae.data.registry import get_dataset
from dpvae.data.standins import GENERATOR_RANGE, SCHEMAS, build_standin, is_standin, standin_id


@pytest.mark.parametrize("real_id", sorted(SCHEMAS))
def test_standin_has_the_real_schema(real_id):
    schema = SCHEMAS[real_id]
    prepared = build_standin(None, 0, real_id=real_id)
    x = np.concatenate([prepared.train.x, prepared.test.x])
    y = np.concatenate([prepared.train.y, prepared.test.y])
    assert x.shape == (schema.n_records, schema.n_features) and x.dtype == np.float32
    assert 0 <= x.min() < 0.1 and 0.9 < x.max() <= 1, "tanh's (-1, 1) into [0, 1]"
    assert prepared.meta["domain"]["source"] == "declared"
    assert {tuple(c["bounds"]) for c in prepared.meta["domain"]["columns"]} == {GENERATOR_RANGE}
    assert y.mean() == pytest.approx(schema.positive_rate, abs=1e-3)
    assert prepared.meta["label_names"] == list(schema.label_names) and "STAND-IN" in prepared.meta["notes"]
    again = build_standin(None, 0, real_id=real_id)
    assert np.array_equal(again.train.x, prepared.train.x)


def test_standin_label_is_learnable():
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    prepared = build_standin(None, 0, real_id="esr")
    model = LogisticRegression(max_iter=500).fit(prepared.train.x, prepared.train.y)
    assert roc_auc_score(prepared.test.y, model.predict_proba(prepared.test.x)[:, 1]) > 0.75


def test_registry_entries_are_generated_and_the_real_ids_keep_their_download():
    for real_id in SCHEMAS:
        spec = get_dataset(standin_id(real_id))
        assert is_standin(spec.dataset_id) and spec.source is None and spec.files == ()
        assert get_dataset(real_id).files, f"{real_id} must keep its download + checksum path"

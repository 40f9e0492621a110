"""Red team, issue 27 (a partial finding): a 1 MB harness id came back whole in the error. What an error
quotes of a request — an id, a run id, a cluster — is now at most its start, with its length."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from harness_bank.bank import BankError
from jitagent.doors.server import ServerConfig
from jitagent.solving.feedback import FeedbackError, Report, report_harness, report_run

from ..jitagent.doors.conftest import free_port, running

BIG = "h" * (1 << 20)


class NoBank:
    def get(self, harness_id):
        raise BankError(f"unknown harness id {harness_id!r}")

    def run(self, run_id):
        raise BankError(f"unknown run {run_id!r}")


@pytest.mark.parametrize("report", [
    lambda bank: report_harness(bank, BIG, "a task", Report(1.0, wall_s=1.0)),
    lambda bank: report_run(bank, BIG, Report(1.0, wall_s=1.0)),
], ids=["harness_id", "run_id"])
def test_feedback_on_a_megabyte_id_quotes_its_start_and_length(report):
    """The gRPC ReportOutcome and the HTTP door's feedback both answer with these."""
    with pytest.raises(FeedbackError) as raised:
        report(NoBank())
    assert len(str(raised.value)) < 400 and "(1,048," in str(raised.value)


def test_a_megabyte_id_or_cluster_is_not_echoed_whole_by_the_server(tmp_path):
    config = ServerConfig(port=free_port(), data_dir=tmp_path / "data", meta_model="scripted")

    async def main():
        async with running(config) as (_, client):
            errors = []
            for call in (client.get_harness, client.lineage, client.rollback):
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await call(BIG)
                errors.append(raised.value)
            return errors
    for error in asyncio.run(main()):
        assert error.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)
        assert len(error.details()) < 400 and "(1,048," in error.details(), error.details()[:300]

from pathlib import Path

import pytest

from oltplab.base.errors import EngineError
from oltplab.sysbench.driver import Call, ConnectionTarget, connection_options
from oltplab.sysbench.output import parse_output
from oltplab.sysbench.reading import read_output
from oltplab.sysbench.validity import stall_notes, validity_flags

DATA = Path(__file__).parent.parent / "data" / "sysbench"


def test_full_read_write_run_is_parsed_line_by_line_and_in_summary():
    out = read_output(DATA / "rw_4th.sysbench.txt")
    assert out.version == "1.0.20"
    assert out.threads == 4
    assert len(out.intervals) == 10
    first = out.intervals[0]
    assert (first.second, first.threads, first.tps, first.qps) == (1, 4, 888.66, 17834.09)
    assert (first.reads_per_s, first.writes_per_s, first.other_per_s) == (
        12495.15,
        3557.63,
        1781.31,
    )
    assert first.lat_pct_ms == 6.43 and first.errors_per_s == 0 and first.reconnects_per_s == 0
    s = out.summary
    assert s is not None
    assert (s.reads, s.writes, s.other, s.queries) == (124600, 35600, 17800, 178000)
    assert (s.transactions, s.tps, s.qps) == (8900, 889.46, 17789.17)
    assert s.errors == 0 and s.reconnects == 0
    assert s.percentile == 95
    assert s.reads_per_s == pytest.approx(124600 / s.total_time_s)
    assert s.lat_min_ms <= s.lat_avg_ms <= s.lat_pct_ms <= s.lat_max_ms
    assert validity_flags(out, seconds=10, interval=1) == []


def test_read_only_run_has_no_writes():
    out = read_output(DATA / "ro_1th.sysbench.txt")
    assert out.summary is not None
    assert out.summary.writes == 0
    assert all(i.writes_per_s == 0 for i in out.intervals)
    assert validity_flags(out, seconds=10, interval=1) == []


def test_run_with_deadlock_errors_counts_them_and_is_flagged():
    out = read_output(DATA / "deadlocks_16th.sysbench.txt")
    assert out.summary is not None
    assert out.summary.errors == 2625
    assert out.summary.errors_per_s == 653.37
    assert [i.errors_per_s for i in out.intervals] == [640.69, 647.18, 618.34, 714.09]
    assert "errors" in validity_flags(out, seconds=4, interval=1)


def test_empty_file_is_flagged_empty():
    out = read_output(DATA / "empty.sysbench.txt")
    assert out.empty and out.summary is None and out.intervals == ()
    assert validity_flags(out, seconds=10, interval=1) == ["empty"]


def test_truncated_file_keeps_its_intervals_but_has_no_summary():
    out = read_output(DATA / "truncated.sysbench.txt")
    assert out.summary is None
    assert len(out.intervals) == 10
    assert validity_flags(out, seconds=10, interval=1) == ["truncated"]


def test_engine_killed_mid_run_shows_the_fatal_lines_and_missing_intervals():
    out = read_output(DATA / "engine_killed.sysbench.txt")
    assert out.summary is None
    assert len(out.intervals) == 2
    assert out.fatal[0].startswith("FATAL: mysql_stmt_execute() returned error 2013")
    assert validity_flags(out, seconds=6, interval=1) == ["truncated", "missing-intervals"]


def test_gap_in_intervals_is_flagged():
    text = (DATA / "rw_4th.sysbench.txt").read_text()
    lines = [line for line in text.splitlines() if not line.startswith("[ 5s ]")]
    out = parse_output("\n".join(lines))
    assert "missing-intervals" in validity_flags(out, seconds=10, interval=1)


def test_short_run_is_flagged():
    out = read_output(DATA / "rw_4th.sysbench.txt")
    assert "short" in validity_flags(out, seconds=60, interval=1)


def test_the_command_line_holds_no_connection_options_only_their_file(tmp_path):
    options = tmp_path / "connection.cnf"
    call = Call(
        "oltp_read_only",
        "run",
        threads=8,
        tables=2,
        table_size=100,
        seconds=30,
        report_interval=1,
        options={"range_selects": False, "skip_trx": True},
    )
    args = call.args("sysbench", options)
    assert args[1] == "oltp_read_only" and args[-1] == "run"
    assert "--threads=8" in args and "--time=30" in args and "--report-interval=1" in args
    assert "--range_selects=off" in args and "--skip_trx=on" in args
    assert f"--config-file={options}" in args
    assert not any("mysql" in a or "pgsql" in a for a in args)


def test_connection_options_are_sysbench_config_lines():
    text = connection_options(ConnectionTarget("127.0.0.1", 3307, "u", "s3cret"))
    assert text.splitlines() == [
        "db-driver=mysql",
        "mysql-host=127.0.0.1",
        "mysql-port=3307",
        "mysql-user=u",
        "mysql-password=s3cret",
        "mysql-db=sbtest",
    ]
    # sysbench splits these lines at white space: such a password is refused, not cut.
    with pytest.raises(EngineError, match="the password holds white space"):
        connection_options(ConnectionTarget("127.0.0.1", 3307, "u", "two words"))


def test_reconnects_are_counted_and_flagged():
    # sysbench 1.0.20 crashes when it reconnects (see tests/engine/test_flags.py), so no
    # real run can show reconnects here: this is a real recording with its counts edited.
    text = (DATA / "rw_4th.sysbench.txt").read_text()
    text = text.replace("reconn/s: 0.00", "reconn/s: 1.00").replace(
        "reconnects:                          0      (0.00 per sec.)",
        "reconnects:                          10     (1.00 per sec.)",
    )
    out = parse_output(text)
    assert out.summary.reconnects == 10 and out.summary.reconnects_per_s == 1.0
    assert all(i.reconnects_per_s == 1.0 for i in out.intervals)
    assert validity_flags(out, seconds=10, interval=1) == ["reconnects"]


def test_more_intervals_than_the_run_was_asked_for_is_flagged():
    out = read_output(DATA / "rw_4th.sysbench.txt")  # a 10 s run, checked as if asked for 5 s
    assert validity_flags(out, seconds=5, interval=1) == ["extra-intervals"]


def test_a_freeze_longer_than_the_cell_is_a_stall_in_a_run_and_on_import():
    """Real recordings of a 6 s cell frozen for 30 s from its second second. The server
    SIGSTOPped: sysbench printed 29 of its 31 lines at 0 TPS, so every percentile of them
    all is 0."""
    out = read_output(DATA / "server_stopped_30s_in_6s_cell_2th.sysbench.txt")
    assert stall_notes(out) == "stall 3-31 s"
    assert validity_flags(out, seconds=6, interval=1) == ["stall", "extra-intervals"]
    assert validity_flags(out, None) == ["stall"]  # an import knows neither length
    # sysbench itself SIGSTOPped as long: it printed `[ 1s ]`, then `[ 31s ]` at 1.82 TPS.
    out = read_output(DATA / "sysbench_stopped_30s_in_6s_cell_2th.sysbench.txt")
    assert stall_notes(out) == "stall 2-31 s"
    assert validity_flags(out, seconds=6, interval=1) == ["stall", "missing-intervals"]
    assert validity_flags(out, None) == ["stall", "missing-intervals"]


def test_client_share_is_cpu_over_what_the_client_could_use():
    from oltplab.sysbench.driver import client_share

    assert client_share(9.5, 10, threads=1, cores=2) == 0.95  # one thread: one core at most
    assert client_share(9.5, 10, threads=8, cores=2) == 0.475
    assert client_share(0, 0, threads=1, cores=2) == 0.0


def test_lines_the_fast_pattern_misses_are_read_by_the_full_one() -> None:
    line = (
        "[ {s}s ] thds: 4 tps: {tps} qps: 8921.85 (r/w/o: 6245.29/1784.37/892.19) "
        "lat (ms,95%): 11.24 err/s: 0.00 reconn/s: 0.00"
    )
    plain = [line.format(s=1, tps="446.05"), line.format(s=2, tps="450.10")]
    # an exponent, and a bracketed line that is no per-second sample (sysbench --rate)
    odd = [line.format(s=3, tps="4.5e2"), "[ 3s ] queue length: 0, concurrency: 4"]
    out = parse_output("\n".join(plain + odd))
    assert [i.tps for i in out.intervals] == [446.05, 450.10, 450.0]
    assert [i.second for i in out.intervals] == [1.0, 2.0, 3.0]


def test_ignored_errors_by_code_are_summed_over_the_threads_that_printed_them() -> None:
    from tests.support.synthetic import sysbench_text

    text = sysbench_text([100.0] * 5, 4)
    gate = "oltplab: ignored errors: 1205=1 1213=4\noltplab: ignored errors: 1213=2 40P01=3\n"
    parsed = parse_output(text.replace("SQL statistics:", gate + "SQL statistics:", 1))
    assert parsed.ignored_errors == (("1213", 6), ("40P01", 3), ("1205", 1))
    assert parsed.summary is not None and len(parsed.tps) == 5
    assert parse_output(text).ignored_errors == ()  # other harnesses' outputs: not counted

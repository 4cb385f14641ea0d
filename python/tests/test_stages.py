"""The two stages from Python: stage 1 per input, stage 2 per partition key, give
the command line's records; a session split over two grouped inputs is judged as
the whole log is."""

import collections
import json

import pytest

import mcpsift


def _staged(inputs, **options):
    """Stage 1 on each ``(name, data, group)``, stage 2 per partition key."""
    parts = collections.defaultdict(list)
    inputs_out = []
    for name, data, group in inputs:
        for one in mcpsift.calls(name, data, group=group, **options):
            inputs_out.append(one["input"])
            for key, record in one["records"]:
                parts[key].append(record)
    out = [r for key in sorted(parts) for r in mcpsift.correlate(parts[key], **options)]
    return inputs_out, out


def _key(r):
    return json.dumps(r, sort_keys=True)


def test_every_lab_file_staged_gives_the_cli_records(lab_files, lab_records, cli):
    theirs = cli(lab_files)
    inputs, ours = _staged([(str(p), p.read_bytes(), None) for p in lab_files])
    assert inputs == [r for r in theirs if r["type"] == "input"]
    want = [r for r in theirs if r["type"] in ("call", "finding")]
    assert sorted(map(_key, ours)) == sorted(map(_key, want))
    assert sum(r["type"] == "finding" for r in ours) > 50


def test_a_split_session_grouped_is_judged_as_the_whole_log(lab, cli):
    log = lab / "no_response_replay_py" / "exchanges.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    a, b = b"".join(lines[:3]), b"".join(lines[3:])
    _, ours = _staged([("a.jsonl", a, "s"), ("b.jsonl", b, "s")])
    theirs = [r for r in cli([log]) if r["type"] in ("call", "finding")]

    def placeless(r):
        r = {k: v for k, v in r.items() if k not in ("input", "location", "locations")}
        if "previous_attempt" in r:
            r["previous_attempt"].pop("location")
        return r

    assert sorted(_key(placeless(r)) for r in ours) == sorted(_key(placeless(r)) for r in theirs)
    kinds = {r["kind"] for r in ours if r["type"] == "finding"}
    assert "UNSAFE_REPLAY" in kinds
    # Ungrouped, the retry in b.jsonl has no first attempt to be a replay of.
    _, alone = _staged([("a.jsonl", a, None), ("b.jsonl", b, None)])
    assert "UNSAFE_REPLAY" not in {r["kind"] for r in alone if r["type"] == "finding"}


def test_partition_keys_follow_the_group(lab):
    data = (lab / "stdio_py" / "transcript.jsonl").read_bytes()
    (alone,) = mcpsift.calls("t.jsonl", data)
    (grouped,) = mcpsift.calls("t.jsonl", data, group="g")
    assert {k for k, _ in alone["records"]} == {mcpsift.partition_key("t.jsonl")}
    assert {k for k, _ in grouped["records"]} == {mcpsift.partition_key("g")}
    assert alone["failed"] is False and alone["input"]["calls"] > 0


def test_stage_one_of_junk_is_a_failed_input_record():
    (one,) = mcpsift.calls("junk.bin", b"\x00\x01 not a capture \xff" * 8)
    assert one["failed"] is True
    assert one["input"]["status"] == "error" and one["input"]["path"] == "junk.bin"
    assert one["records"] == []


def test_stage_two_rejects_what_stage_one_did_not_write(lab):
    data = (lab / "stdio_py" / "transcript.jsonl").read_bytes()
    (one,) = mcpsift.calls("t.jsonl", data)
    good = [r for _, r in one["records"]]
    with pytest.raises(ValueError, match="record 1: not a stage-1 record"):
        list(mcpsift.correlate([good[0], '{"kind": "call"}']))
    with pytest.raises(ValueError, match="record 0"):
        list(mcpsift.correlate(["not json"]))


def test_filters_are_refused_by_the_stages():
    with pytest.raises(ValueError, match="analyze"):
        mcpsift.calls("x", b"", tool="t")
    with pytest.raises(ValueError, match="analyze"):
        list(mcpsift.correlate([], outcome="NO_RESPONSE"))


def test_a_walked_file_that_is_no_input_is_skipped_as_a_walk_skips_it(lab, cli):
    notes = lab / "baseline_py_json" / "expected.json"
    (named,) = mcpsift.calls("expected.json", notes.read_bytes())
    assert named["failed"] and named["skipped"] is None and named["input"]["status"] == "error"
    (walked,) = mcpsift.calls("expected.json", notes.read_bytes(), walked=True)
    assert walked["input"] is None and walked["records"] == []
    reason = [s["reason"] for s in cli([lab / "baseline_py_json"])[-1]["skipped"]]
    assert walked["skipped"] in reason
    # A real input is not touched by walked=True.
    data = (lab / "stdio_py" / "transcript.jsonl").read_bytes()
    assert mcpsift.calls("t.jsonl", data, walked=True) == mcpsift.calls("t.jsonl", data)


def test_summaries_of_parts_merge_into_the_summary_of_the_whole(lab_files, cli):
    files = lab_files[:40]
    whole = cli(files)[-1]
    assert whole["type"] == "summary" and whole["calls"] > 50
    # Per part: the CLI's summary record, or one built from the stages' records.
    halves = [files[0::2], files[1::2]]
    printed = [cli(h)[-1] for h in halves]
    assert mcpsift.summarize(printed) == whole
    inputs, records = _staged([(str(p), p.read_bytes(), None) for p in halves[1]])
    from_stages = mcpsift.summarize(inputs + records)
    assert from_stages == printed[1]
    assert mcpsift.summarize([printed[0], json.dumps(from_stages)]) == whole


def test_unredacted_stages_give_the_cli_no_redact_records(tmp_path, cli):
    # A success whose text reads like an error is a finding that quotes the text:
    # stage 2 writes it, so redact=False must reach stage 2 too.
    secret = "password=hunter2-correct-horse-battery"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "login", "arguments": {}}}
    result = {"jsonrpc": "2.0", "id": 1,
              "result": {"content": [{"type": "text", "text": f"Error: bad {secret}"}]}}
    record = {"ts": "2026-12-01T10:00:00.000Z",
              "request": {"method": "POST", "url": "http://127.0.0.1:3000/mcp",
                          "headers": [["content-type", "application/json"]],
                          "body": json.dumps(call)},
              "response": {"status": 200, "headers": [["content-type", "application/json"]],
                           "body": json.dumps(result)},
              "end_ts": "2026-12-01T10:00:00.040Z"}
    log = tmp_path / "secret.jsonl"
    log.write_text(json.dumps(record) + "\n")
    theirs = [r for r in cli([log, "--no-redact"]) if r["type"] in ("call", "finding")]
    assert any(secret in json.dumps(r) for r in theirs if r["type"] == "finding")
    _, ours = _staged([(str(log), log.read_bytes(), None)], redact=False)
    assert sorted(map(_key, ours)) == sorted(map(_key, theirs))
    _, redacted = _staged([(str(log), log.read_bytes(), None)])
    assert not any(secret in json.dumps(r) for r in redacted)

"""mcpsift.analyze against the command line: the same records, key for key, on
every lab capture (real SDK peers, recorded by lab/run.sh) and with each option."""

import json

import pytest

import mcpsift


def test_the_lab_directory_gives_the_cli_records(lab, lab_records, cli):
    ours = lab_records
    theirs = cli([lab])
    assert ours == theirs
    # Not vacuous: calls, findings and walked files that are no input are in it.
    kinds = {r["type"] for r in ours}
    assert kinds == {"input", "call", "finding", "summary"}
    assert ours[-1]["skipped"], "the lab's expected.json files are skipped by the walk"
    assert ours[-1]["calls"] > 2000


def test_every_lab_file_read_from_bytes_gives_the_cli_records(lab_files, cli):
    # Named as the CLI names them (the path as given), read from memory.
    ours = list(mcpsift.analyze([(str(p), p.read_bytes()) for p in lab_files]))
    assert ours == cli(lab_files)
    formats = {r["format"] for r in ours if r["type"] == "input"}
    assert {"har", "pcap", "pcapng", "jsonl"} <= formats


def test_paths_may_be_path_objects_and_lists(lab):
    one = lab / "wrong_id_py" / "exchanges.jsonl"
    assert list(mcpsift.analyze(one)) == list(mcpsift.analyze([str(one)]))


@pytest.mark.parametrize(
    "options, flags",
    [
        ({"tool": "delete_file"}, ["--tool", "delete_file"]),
        ({"outcome": ["stream-incomplete", "NO_RESPONSE"]},
         ["--outcome", "stream-incomplete", "--outcome", "NO_RESPONSE"]),
        ({"finding": "unsafe_replay"}, ["--finding", "unsafe_replay"]),
        ({"scope": "stdio"}, ["--scope", "stdio"]),
    ],
)
def test_filters_match_the_cli_flags(lab, lab_records, options, flags, cli):
    ours = list(mcpsift.analyze(str(lab), **options))
    assert ours == cli([lab, *flags])
    assert ours[-1]["filters"], "a filtered report says so"
    assert ours[-1]["calls"] < lab_records[-1]["calls"]


def test_windows_match_the_cli_flags_and_change_verdicts(lab, cli):
    files = [lab / "long_session_py" / "exchanges.jsonl", lab / "stdio_py" / "transcript.jsonl"]
    narrow = list(mcpsift.analyze(files, retry_window="1ms", double_dispatch_window="1ms"))
    assert narrow == cli([*files, "--retry-window", "1ms", "--double-dispatch-window", "1ms"])
    assert narrow != list(mcpsift.analyze(files)), "the windows must reach the analysis"
    # A number is seconds, as the CLI reads a bare number.
    assert list(mcpsift.analyze(files, retry_window=0.001, double_dispatch_window=0.001)) == narrow


def _secret_transcript():
    secret = "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4NmLk3"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "fetch", "arguments": {"url": "https://example.test/"}}},
        {"jsonrpc": "2.0", "id": 1,
         "error": {"code": -32000, "message": f"upstream refused Authorization: Bearer {secret}"}},
    ]
    return secret, "".join(json.dumps(l) + "\n" for l in lines).encode()


def test_redaction_is_on_by_default_and_off_as_no_redact(tmp_path, cli):
    secret, data = _secret_transcript()
    path = tmp_path / "tee.jsonl"
    path.write_bytes(data)
    redacted = list(mcpsift.analyze((str(path), data)))
    plain = list(mcpsift.analyze((str(path), data), redact=False))
    assert redacted == cli([path])
    assert plain == cli([path, "--no-redact"])
    assert secret not in json.dumps(redacted)
    assert secret in json.dumps(plain)


def test_caps_are_reported_as_the_cli_reports_them(lab, cli):
    f = lab / "long_session_py" / "exchanges.jsonl"
    ours = list(mcpsift.analyze(f, max_record_bytes=1000))
    assert ours == cli([f, "--max-record-bytes", "1000"], check_codes=(2,))
    problems = ours[0]["problems"]
    assert problems and all(p["kind"] == "cap" for p in problems)
    assert "--max-record-bytes" in problems[0]["message"]


def test_unreadable_inputs_are_error_records_naming_them(tmp_path, cli):
    missing = tmp_path / "gone.pcap"
    (rec, summary) = list(mcpsift.analyze(missing))
    assert rec["status"] == "error" and rec["path"] == str(missing)
    assert summary["inputs_with_errors"] == 1
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01\x02 not a capture \xff" * 10)
    ours = list(mcpsift.analyze((str(junk), junk.read_bytes())))
    assert ours == cli([junk], check_codes=(2,))
    assert ours[0]["status"] == "error" and ours[0]["error"]


def test_bad_options_raise_value_error():
    with pytest.raises(ValueError, match="NOPE"):
        mcpsift.analyze(b"", outcome="NOPE")
    with pytest.raises(ValueError, match="retry_window"):
        mcpsift.analyze(b"", retry_window="soon")
    with pytest.raises(TypeError):
        mcpsift.analyze(b"", no_such_option=1)
    with pytest.raises(TypeError, match="either"):
        mcpsift.analyze(["a.jsonl", b"{}"])


def test_ids_keep_their_json_type():
    lines = [
        {"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": {"name": "t", "arguments": {}}},
        {"jsonrpc": "2.0", "id": "1", "result": {"content": []}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {"a": 1}}},
        {"jsonrpc": "2.0", "id": 1, "result": {"content": []}},
    ]
    data = "".join(json.dumps(l) + "\n" for l in lines).encode()
    calls = [r for r in mcpsift.analyze(("tee.jsonl", data)) if r["type"] == "call"]
    assert [c["id"] for c in calls] == ["1", 1]

"""mitmdump addon for the traffic lab.

* Streams every response body to the client as it arrives (SSE must not be buffered), while
  keeping a copy so that `--set hardump=FILE` still writes the body into the HAR.
* Mirrors a broken upstream: if the fault proxy closes the connection before any response,
  mitmdump would normally answer 502 itself; this addon kills the client connection instead,
  so the client sees the same "no response" that the proxy produced.
* mitmproxy's HAR export only records an error for flows without any response. This addon saves
  the error message of flows whose body broke after the headers to FILE.errors.json, and
  run_lab.py adds it as "_error" to those entries' response (the key mitmproxy's own export and
  Chrome's HAR use).
"""
import json
from datetime import datetime, timezone

from mitmproxy import ctx, http


class Tee:
    def __init__(self):
        self.errors = {}

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        buf = bytearray()
        flow.metadata["lab_tee"] = buf

        def tee(data: bytes) -> bytes:
            buf.extend(data)
            return data

        flow.response.stream = tee

    def _fill(self, flow: http.HTTPFlow) -> None:
        buf = flow.metadata.get("lab_tee")
        if flow.response is not None and buf is not None and not flow.response.raw_content:
            flow.response.raw_content = bytes(buf)

    def response(self, flow: http.HTTPFlow) -> None:
        self._fill(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._fill(flow)
        ctx.log.info(f"lab_tee error hook: {flow.request.method} {flow.request.pretty_url} "
                     f"response={flow.response is not None} error={flow.error and flow.error.msg}")
        if flow.response is None and flow.killable:
            flow.kill()
        elif flow.response is not None and flow.error:
            key = (datetime.fromtimestamp(flow.request.timestamp_start, timezone.utc).isoformat(),
                   flow.request.method, flow.request.pretty_url)
            self.errors[key] = flow.error.msg

    def done(self):
        # mitmproxy's own HAR export may run after this hook, so the errors go to a sidecar file
        # that run_lab.py folds into the HAR once mitmdump has exited.
        path = ctx.options.hardump
        if path and path != "-":
            with open(path + ".errors.json", "w") as f:
                json.dump([[k[0], k[1], k[2], v] for k, v in self.errors.items()], f)


addons = [Tee()]

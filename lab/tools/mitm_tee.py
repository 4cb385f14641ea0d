"""mitmdump addon for the traffic lab.

* Streams every response body to the client as it arrives (SSE must not be buffered), while
  keeping a copy so that `--set hardump=FILE` still writes the body into the HAR.
* Mirrors a broken upstream: if the fault proxy closes the connection before any response,
  mitmdump would normally answer 502 itself; this addon kills the client connection instead,
  so the client sees the same "no response" that the proxy produced.
"""
from mitmproxy import http


class Tee:
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
        if flow.response is None and flow.killable:
            flow.kill()


addons = [Tee()]

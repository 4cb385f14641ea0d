"""A TLS front for the lab's TLS runs: accepts HTTPS on --listen and pipes each connection's plaintext
to --upstream (the fault proxy), one upstream connection per client connection, so the client's
connection reuse and closes reach the fault proxy unchanged. The version cap, the TLS 1.2 cipher list
and ALPN are set here, on the server side, as a real HTTPS server would.

    tls_front.py --listen 127.0.0.1:18443 --upstream 127.0.0.1:18081 --cert c.pem --key k.pem
                 [--max-version 1.2|1.3] [--ciphers OPENSSL-TLS1.2-LIST]
"""
import argparse
import asyncio
import ssl


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--max-version", choices=["1.2", "1.3"], default="1.3")
    ap.add_argument("--ciphers")
    return ap.parse_args()


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        # A close from one side is passed on as a close (TLS: close_notify, then FIN).
        try:
            if writer.can_write_eof():
                writer.write_eof()
            else:
                writer.close()
        except (ConnectionError, OSError, ssl.SSLError):
            pass


async def main():
    a = parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2 if a.max_version == "1.2" else ssl.TLSVersion.TLSv1_3
    if a.ciphers:
        ctx.set_ciphers(a.ciphers)
    ctx.set_alpn_protocols(["http/1.1"])
    up_host, up_port = a.upstream.rsplit(":", 1)

    async def handle(creader, cwriter):
        try:
            ureader, uwriter = await asyncio.open_connection(up_host, int(up_port))
        except OSError:
            cwriter.close()
            return
        await asyncio.gather(pipe(creader, uwriter), pipe(ureader, cwriter))
        for w in (uwriter, cwriter):
            try:
                w.close()
                await w.wait_closed()
            except (ConnectionError, OSError, ssl.SSLError):
                pass

    host, port = a.listen.rsplit(":", 1)
    server = await asyncio.start_server(handle, host, int(port), ssl=ctx)
    print(f"tls_front listening on {a.listen}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())

#!/usr/bin/python3
"""tests/wan/proxy.py: a TCP forwarding proxy that adds a fixed one-way latency to each direction and
can be partitioned (nothing moves either way) for N seconds. Python 3 standard library only.

It does not drop, reorder or corrupt bytes: a partition stalls both directions as a dead link would
(TCP's own buffers fill, then the sender waits), and the bytes move on when it heals. Each direction of
each connection holds at most --buffer bytes in flight; beyond that the proxy stops reading, so a fast
sender sees backpressure, not an unbounded queue.

  proxy.py --listen 10.77.1.1:6555 --target 127.0.0.1:5555 --delay-ms 25 [--control 127.0.0.1:6999]

Control (one line per connection, answered with one line): "partition SECONDS", "heal", "stats".
SIGUSR1 partitions for --partition-s seconds. Used by bench/wan/run.sh for latency.
"""
import argparse
import asyncio
import json
import signal
import sys
import time


def host_port(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got '{text}'")
    return host, int(port)


class Proxy:
    def __init__(self, args):
        self.args = args
        self.open = asyncio.Event()
        self.open.set()
        self.heal_at = 0.0
        self.heal_task = None
        self.stats = {"connections": 0, "active": 0, "bytes_up": 0, "bytes_down": 0, "partitions": 0}

    def partition(self, seconds):
        seconds = max(0.0, min(float(seconds), 3600.0))
        self.stats["partitions"] += 1
        self.open.clear()
        self.heal_at = time.monotonic() + seconds
        if self.heal_task:
            self.heal_task.cancel()
        self.heal_task = asyncio.get_running_loop().create_task(self._heal_after(seconds))
        print(f"proxy: partitioned for {seconds:g} s", file=sys.stderr, flush=True)

    async def _heal_after(self, seconds):
        await asyncio.sleep(seconds)
        self.heal()

    def heal(self):
        if not self.open.is_set():
            print("proxy: healed", file=sys.stderr, flush=True)
        self.open.set()

    async def pipe(self, reader, writer, delay_s, counter):
        """Copies reader to writer, each chunk delivered delay_s after it was read."""
        queue = asyncio.Queue()
        in_flight = 0
        room = asyncio.Condition()
        limit = self.args.buffer

        async def deliver():
            nonlocal in_flight
            while True:
                due, data = await queue.get()
                if data is None:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                await self.open.wait()
                writer.write(data)
                await writer.drain()
                self.stats[counter] += len(data)
                async with room:
                    in_flight -= len(data)
                    room.notify_all()

        task = asyncio.get_running_loop().create_task(deliver())
        try:
            while True:
                await self.open.wait()
                async with room:
                    await room.wait_for(lambda: in_flight < limit)
                data = await reader.read(65536)
                if not data:
                    break
                async with room:
                    in_flight += len(data)
                await queue.put((time.monotonic() + delay_s, data))
        except (ConnectionError, OSError):
            pass
        finally:
            await queue.put((0.0, None))
            try:
                await task
                if writer.can_write_eof():
                    writer.write_eof()
            except (ConnectionError, OSError):
                pass

    async def on_client(self, c_reader, c_writer):
        self.stats["connections"] += 1
        self.stats["active"] += 1
        try:
            t_reader, t_writer = await asyncio.wait_for(asyncio.open_connection(*self.args.target), 10)
        except (OSError, asyncio.TimeoutError) as e:
            print(f"proxy: cannot reach {self.args.target}: {e}", file=sys.stderr, flush=True)
            c_writer.close()
            self.stats["active"] -= 1
            return
        up = self.args.delay_up_ms if self.args.delay_up_ms is not None else self.args.delay_ms
        down = self.args.delay_down_ms if self.args.delay_down_ms is not None else self.args.delay_ms
        await asyncio.gather(self.pipe(c_reader, t_writer, up / 1000, "bytes_up"),
                             self.pipe(t_reader, c_writer, down / 1000, "bytes_down"))
        for w in (c_writer, t_writer):
            w.close()
        self.stats["active"] -= 1

    async def on_control(self, reader, writer):
        try:
            line = (await asyncio.wait_for(reader.readline(), 5)).decode(errors="replace").split()
            if line[:1] == ["partition"] and len(line) == 2:
                self.partition(float(line[1]))
                answer = {"ok": True}
            elif line == ["heal"]:
                self.heal()
                answer = {"ok": True}
            elif line == ["stats"]:
                answer = dict(self.stats, partitioned=not self.open.is_set())
            else:
                answer = {"error": "commands: partition SECONDS | heal | stats"}
        except (ValueError, asyncio.TimeoutError, ConnectionError) as e:
            answer = {"error": str(e)}
        writer.write((json.dumps(answer) + "\n").encode())
        try:
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()

    async def serve(self):
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, lambda: self.partition(self.args.partition_s))
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        servers = [await asyncio.start_server(self.on_client, *self.args.listen, reuse_address=True)]
        if self.args.control:
            servers.append(await asyncio.start_server(self.on_control, *self.args.control, reuse_address=True))
        print(f"proxy: {self.args.listen[0]}:{self.args.listen[1]} -> {self.args.target[0]}:{self.args.target[1]}, "
              f"delay {self.args.delay_ms} ms each way", file=sys.stderr, flush=True)
        if self.args.lifetime_s > 0:
            loop.call_later(self.args.lifetime_s, stop.set)
        await stop.wait()
        for s in servers:
            s.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", type=host_port, required=True, help="HOST:PORT to accept on")
    p.add_argument("--target", type=host_port, required=True, help="HOST:PORT to forward to")
    p.add_argument("--delay-ms", type=float, default=0.0, help="one-way latency, each direction")
    p.add_argument("--delay-up-ms", type=float, help="client -> target latency (default --delay-ms)")
    p.add_argument("--delay-down-ms", type=float, help="target -> client latency (default --delay-ms)")
    p.add_argument("--buffer", type=int, default=4 << 20, help="bytes in flight per direction per connection")
    p.add_argument("--control", type=host_port, help="HOST:PORT of the control socket")
    p.add_argument("--partition-s", type=float, default=10.0, help="how long SIGUSR1 partitions")
    p.add_argument("--lifetime-s", type=float, default=7200.0, help="exit after this long (0: never)")
    args = p.parse_args()
    asyncio.run(Proxy(args).serve())


if __name__ == "__main__":
    main()

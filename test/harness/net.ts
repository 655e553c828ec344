import { createServer } from 'node:net';

/**
 * Ports below the kernel's ephemeral range (`ip_local_port_range`, 32768–60999 by default): the
 * kernel never hands these out, neither to `listen(0)` nor as the source port of an outgoing
 * connection. A port from that range, held across an n8n restart, could meanwhile become some
 * client socket's source port, and n8n's next listen would fail.
 */
const PORT_RANGE = { from: 20_000, to: 32_767 };
const handedOut = new Set<number>();

/**
 * A free TCP port from PORT_RANGE, never the same twice in this process; with `count`, the first of
 * that many free ports in a row (an FTP server's passive range).
 */
export async function freePort(count = 1): Promise<number> {
	for (let attempt = 0; attempt < 200; attempt++) {
		const port =
			PORT_RANGE.from + Math.floor(Math.random() * (PORT_RANGE.to - PORT_RANGE.from + 2 - count));
		const ports = Array.from({ length: count }, (_, index) => port + index);
		if (ports.some((candidate) => handedOut.has(candidate))) continue;
		if (!(await Promise.all(ports.map(canListen))).every(Boolean)) continue;
		for (const candidate of ports) handedOut.add(candidate);
		return port;
	}
	throw new Error(
		`no ${count} free port(s) in a row between ${PORT_RANGE.from} and ${PORT_RANGE.to} after 200 tries`,
	);
}

/** Whether a server could listen on `port` on every interface now (n8n listens on all of them). */
async function canListen(port: number): Promise<boolean> {
	return await new Promise((resolve) => {
		const server = createServer();
		server.unref();
		server.once('error', () => resolve(false));
		server.listen(port, () => server.close(() => resolve(true)));
	});
}

/**
 * Polls `probe` until it returns a value other than undefined, or fails with `description` after
 * `timeoutMs`. This is how tests wait for an event they cannot subscribe to (n8n's API state);
 * the interval is the polling cadence, not a guess at how long something takes.
 */
export async function waitFor<T>(
	description: string,
	probe: () => Promise<T | undefined>,
	{ timeoutMs = 60_000, intervalMs = 250 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	let lastError: unknown;
	for (;;) {
		try {
			const value = await probe();
			if (value !== undefined) return value;
		} catch (error) {
			lastError = error;
		}
		if (Date.now() > deadline) {
			const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
			throw new Error(`Timed out after ${timeoutMs} ms waiting for ${description}${cause}`);
		}
		await new Promise((resolve) => setTimeout(resolve, intervalMs));
	}
}

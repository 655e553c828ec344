import { createServer } from 'node:net';

/** A TCP port that was free on loopback a moment ago. */
export async function freePort(): Promise<number> {
	return await new Promise((resolve, reject) => {
		const server = createServer();
		server.unref();
		server.on('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const address = server.address();
			server.close(() =>
				typeof address === 'object' && address
					? resolve(address.port)
					: reject(new Error('no port')),
			);
		});
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

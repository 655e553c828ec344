import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createPublicKey, type JsonWebKey, type KeyObject, verify } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';

export interface TokenEvent {
	clientId: string;
	grant: string;
	status: number;
	accessToken?: string;
}

export type TokenCheck =
	| { ok: true; token: string; clientId: string }
	| { ok: false; reason: 'missing' | 'invalid' | 'expired' };

/**
 * A real OAuth2 authorization server on loopback (oauth2-mock-server in a child process,
 * test/harness/oauth2Server.mjs): issues RS256 JWT access tokens by client credentials, authorization
 * code and refresh token grants. The test sets the tokens' lifetime and revokes clients; every token
 * request is recorded. `check` verifies a bearer token the way a protected API would: signature
 * (against the server's /jwks) and expiry.
 */
export class OAuth2AuthServer {
	readonly tokenEvents: TokenEvent[] = [];
	private readonly waiters: Array<() => void> = [];
	private keys = new Map<string, KeyObject>();
	private nextId = 1;
	private readonly acks = new Map<number, () => void>();

	private constructor(
		private readonly child: ChildProcessWithoutNullStreams,
		readonly issuer: string,
	) {}

	static async start(): Promise<OAuth2AuthServer> {
		const child = spawn(process.execPath, [path.join(__dirname, 'oauth2Server.mjs')], {
			stdio: ['pipe', 'pipe', 'pipe'],
		});
		let stderr = '';
		child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
		const lines = createInterface({ input: child.stdout });
		const issuer = await new Promise<string>((resolve, reject) => {
			child.once('exit', (code) => reject(new Error(`oauth2 server exited (${code}): ${stderr}`)));
			lines.once('line', (line) => resolve((JSON.parse(line) as { ready: string }).ready));
		});
		const server = new OAuth2AuthServer(child, issuer);
		lines.on('line', (line) => server.onMessage(JSON.parse(line) as Record<string, unknown>));
		const jwks = (await (await fetch(`${issuer}/jwks`)).json()) as {
			keys: Array<JsonWebKey & { kid: string }>;
		};
		server.keys = new Map(
			jwks.keys.map((jwk) => [jwk.kid, createPublicKey({ key: jwk, format: 'jwk' })]),
		);
		return server;
	}

	get tokenUrl(): string {
		return `${this.issuer}/token`;
	}

	get authorizeUrl(): string {
		return `${this.issuer}/authorize`;
	}

	/** The lifetime (`exp` and `expires_in`) of tokens issued from now on. */
	async setTokenLifetime(seconds: number): Promise<void> {
		await this.command({ cmd: 'lifetime', seconds });
	}

	/** From now on the token endpoint answers this client 401 invalid_client. */
	async revoke(clientId: string): Promise<void> {
		await this.command({ cmd: 'revoke', clientId });
	}

	/** From now on a refresh-token request of this client answers 400 invalid_grant. */
	async revokeGrant(clientId: string): Promise<void> {
		await this.command({ cmd: 'revokeGrant', clientId });
	}

	/** Resolves once `count` token requests for the client have been answered in all. */
	async tokenRequests(clientId: string, count: number, timeoutMs = 60_000): Promise<TokenEvent[]> {
		const mine = () => this.tokenEvents.filter((e) => e.clientId === clientId);
		const deadline = Date.now() + timeoutMs;
		while (mine().length < count) {
			if (Date.now() > deadline)
				throw new Error(
					`timed out waiting for ${count} token requests of ${clientId}; got ${mine().length}`,
				);
			await new Promise<void>((resolve) => {
				const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
				this.waiters.push(() => {
					clearTimeout(timer);
					resolve();
				});
			});
		}
		return mine();
	}

	/** Checks an Authorization header as a protected API does. */
	check(authorization: string | string[] | undefined): TokenCheck {
		const header = Array.isArray(authorization) ? authorization[0] : authorization;
		if (!header?.startsWith('Bearer ')) return { ok: false, reason: 'missing' };
		const token = header.slice(7);
		const [head, payload, signature] = token.split('.');
		if (!head || !payload || !signature) return { ok: false, reason: 'invalid' };
		try {
			const { kid } = JSON.parse(Buffer.from(head, 'base64url').toString()) as { kid: string };
			const key = this.keys.get(kid);
			if (
				!key ||
				!verify(
					'RSA-SHA256',
					Buffer.from(`${head}.${payload}`),
					key,
					Buffer.from(signature, 'base64url'),
				)
			)
				return { ok: false, reason: 'invalid' };
			const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as {
				exp: number;
				client_id?: string;
				sub?: string;
			};
			if (claims.exp * 1000 <= Date.now()) return { ok: false, reason: 'expired' };
			return { ok: true, token, clientId: String(claims.client_id ?? claims.sub ?? '') };
		} catch {
			return { ok: false, reason: 'invalid' };
		}
	}

	async close(): Promise<void> {
		if (this.child.exitCode !== null) return;
		const exited = once(this.child, 'exit');
		this.child.stdin.end();
		await exited;
	}

	private async command(command: Record<string, unknown>): Promise<void> {
		const id = this.nextId++;
		const acked = new Promise<void>((resolve) => this.acks.set(id, resolve));
		this.child.stdin.write(`${JSON.stringify({ ...command, id })}\n`);
		await acked;
	}

	private onMessage(message: Record<string, unknown>): void {
		if (typeof message.ack === 'number') {
			this.acks.get(message.ack)?.();
			this.acks.delete(message.ack);
		} else if (message.event === 'token') {
			this.tokenEvents.push(message as unknown as TokenEvent);
			this.waiters.splice(0).forEach((wake) => wake());
		}
	}
}

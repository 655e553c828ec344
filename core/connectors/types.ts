import type { Clock } from '../clock';
import type { SqlSessionFactory } from './sqlTransport';

/**
 * The connector dispatcher: an op is a named operation on an external system ("http.request",
 * "imap.listUnseen", ...). The Poll Trigger calls one on an interval; the Connector node calls one as an
 * action. Ops import nothing from n8n: the node hands them the transports they need.
 */

/** A request as an op asks for it; the node performs it with n8n's helpers and the stored credential. */
export interface HttpRequest {
	method: string;
	/** Absolute, or relative to the credential's base URL. */
	url: string;
	query?: Record<string, string>;
	headers?: Record<string, string>;
	body?: unknown;
	timeoutMs?: number;
	signal?: AbortSignal;
	/** Accept a server certificate that does not verify (n8n's `s3` credential's "Ignore SSL Issues"). */
	skipTlsVerify?: boolean;
	/** `bytes`: the answer's body is wanted as it came (`HttpResponse.bytes`), e.g. a file read from S3. */
	responseType?: 'text' | 'bytes';
	/**
	 * A page of a paginated poll: the credential and With's headers go only to the origin of `home`
	 * (the list's first request, as configured) and to `hosts`; any other URL gets the request without
	 * them (core/connectors/httpAuth.ts sendsCredentials). Unset: one request of its own, sent with both.
	 */
	credentialScope?: CredentialScope;
}

/** Where a paginated poll's credential may go (HttpRequest.credentialScope). */
export interface CredentialScope {
	/** The list's first request's URL, as With gives it (absolute, or relative to the Base URL). */
	home: string;
	/** Other hosts that get it too: names, or `*.example.com` for any subdomain (not the domain itself). */
	hosts: readonly string[];
}

export interface HttpResponse {
	/** The absolute URL the request went to: what a relative link in the answer resolves against. */
	url: string;
	status: number;
	/** Lower-cased header names. */
	headers: Record<string, string>;
	body: string;
	/** The body as it came, when the request asked for `responseType: 'bytes'`. */
	bytes?: Buffer;
}

export type HttpTransport = (request: HttpRequest) => Promise<HttpResponse>;

/** Where and as whom the IMAP ops connect; the node builds it from the stored credential. */
export interface ImapConnection {
	host: string;
	port: number;
	/** TLS from the first byte (port 993); false is a plain connection, upgraded with STARTTLS when the server offers it. */
	secure: boolean;
	user: string;
	password: string;
	/** Accept a certificate that does not verify (self-signed, internal CA). */
	allowSelfSigned?: boolean;
}

/**
 * Where and as whom the SFTP ops connect; the node builds it from n8n's SFTP credential. A password,
 * a private key (OpenSSH or PEM text, with its passphrase), or both: the key is tried first.
 */
export interface SftpConnection {
	host: string;
	port: number;
	username: string;
	password?: string;
	privateKey?: string;
	passphrase?: string;
}

/**
 * Where and as whom the FTP ops connect; the node builds it from n8n's `ftp` credential, which has no
 * TLS field: TLS is the ops' own argument (`tls` in With).
 */
export interface FtpConnection {
	host: string;
	port: number;
	username: string;
	password: string;
}

/**
 * Where and as whom the S3 ops send their requests (AWS S3 and S3-compatible stores: MinIO, Ceph, R2, ...);
 * the node builds it from n8n's `s3` or `aws` credential (nodes/shared/s3Credential.ts).
 */
export interface S3Connection {
	/** `https://s3.eu-west-1.amazonaws.com`, `http://127.0.0.1:9000`: scheme, host, port. */
	endpoint: string;
	/** The signing region: `us-east-1`, R2's `auto`, a MinIO server's own. */
	region: string;
	accessKeyId: string;
	secretAccessKey: string;
	/** Temporary credentials' token. */
	sessionToken?: string;
	/** `endpoint/bucket/key` (MinIO, most self-hosted stores); otherwise `bucket.endpoint/key`. */
	pathStyle: boolean;
	/** Accept a certificate that does not verify (self-signed, internal CA). */
	skipTlsVerify?: boolean;
}

/** A file an op read (`sftp.download`); the Connector node stores it as the item's binary data. */
export interface OpFile {
	data: Buffer;
	fileName: string;
}

/** What an op remembers between calls (e.g. HTTP validators), kept by the caller in static data. */
export type OpMemory = Record<string, string>;

export interface OpContext {
	signal?: AbortSignal;
	timeoutMs?: number;
	/** Memory from the last successful call of this op; empty on the first. */
	memory: OpMemory;
	/**
	 * The trigger's first poll takes what this call lists as its baseline and starts none of it
	 * (First Poll Starts Nothing): list all the source holds, e.g. files still being written.
	 */
	baseline?: boolean;
	http?: HttpTransport;
	imap?: ImapConnection;
	sftp?: SftpConnection;
	ftp?: FtpConnection;
	/** The S3 ops send their requests through `http`, signed for this connection. */
	s3?: S3Connection;
	/** The time ops sign requests with; the system clock when unset. */
	clock?: Clock;
	/** Opens a database session for the SQL ops; the node builds it from n8n's `postgres` or `mySql` credential. */
	sql?: SqlSessionFactory;
}

export type OpResult =
	| {
			kind: 'data';
			data: unknown;
			/** Memory to keep once the caller has used the data successfully. */ memory?: OpMemory;
			/**
			 * An op with a read position (ConnectorOp.rewind): where one item of `data`, as the op gave
			 * it, was read, as text the op's `rewind` takes back; undefined for anything else.
			 */
			positionOf?: (item: unknown) => string | undefined;
			/**
			 * The op stopped at its bound (sql.query's `maxRows`, s3.list's `maxObjects`) and more is to
			 * be read: the memory that reads on from the last item read (`memory` may start earlier,
			 * for the lag). A first poll that only takes a baseline reads on with it (activation.ts).
			 */
			more?: OpMemory;
			/** A file read by the op, for the item's binary data. */
			file?: OpFile;
	  }
	| { kind: 'not_modified' };

/** The transports the nodes build (nodes/shared/opContext.ts) for the ops they offer. */
export type NodeTransport = 'http' | 'imap' | 'sftp' | 'ftp' | 'sql' | 's3';

/** `Transport`: which transport the op needs. */
export interface ConnectorOp<Transport extends string = NodeTransport> {
	name: string;
	description: string;
	/** Which transport the op needs, so the node knows which credential to ask for. */
	transport: Transport;
	/**
	 * The op reads a file (OpResult `file`), which only the Connector node can attach to an item: the
	 * Poll Trigger keeps its runs' items in static data until n8n has them, no place for file contents.
	 */
	givesFile?: boolean;
	/**
	 * The op's memory records what the source looked like at the last call (sftp.list: the files it
	 * saw), not how to ask it again (HTTP validators): Execute step passes the trigger's saved memory,
	 * so it shows what the next poll would start.
	 */
	previewsWithMemory?: boolean;
	/**
	 * Checks the arguments without calling the system, throwing a ConfigError naming the argument
	 * (`url` in "With") and its value; the Poll Trigger calls it at activation and Execute step.
	 */
	check(args: Record<string, unknown>): void;
	/**
	 * The op reads on from a position it keeps in its memory (sql.query's keyset, s3.list's
	 * `afterLastKey`), so an item it has read is listed again only if the position goes back. Given
	 * the memory a call would read from and the positions (OpResult `positionOf`) of items whose
	 * runs n8n did not start, returns the memory that lists them again: it reads from just before
	 * the earliest of them (never from further back than that), and up to where `memory` had read
	 * gives only those items. Undefined: it cannot tell, read from the op's start (`from`).
	 */
	rewind?(memory: OpMemory | undefined, owed: readonly string[]): OpMemory | undefined;
	run(args: Record<string, unknown>, context: OpContext): Promise<OpResult>;
}

/** A failed call of an op. `retryAfterMs` is set when the system said when to come back (429/503). */
export class ConnectorError extends Error {
	constructor(
		message: string,
		readonly details: {
			status?: number;
			retryAfterMs?: number;
			description?: string;
			/** A network failure (core/connectors/network.ts): where (host:port) and what failed, in words. */
			unreachable?: { at: string; words: string };
		} = {},
	) {
		super(message);
		this.name = 'ConnectorError';
	}

	get retryAfterMs(): number | undefined {
		return this.details.retryAfterMs;
	}
}

import type { N8nInstance } from '../harness/n8nInstance';
import { freePort } from '../harness/net';
import { sharedN8n } from '../harness/shared';
import { node, PACKAGE, workflow } from './workflowBuilder';

/**
 * Issue 47: every op's network failure reaches the failed execution in the package's words, naming
 * the op, the host and the port and what failed. n8n-workflow's NodeError replaces a message that
 * holds a socket code (ECONNREFUSED, ENOTFOUND, ...) with stock text naming no host; the package
 * says what failed in words instead (core/connectors/network.ts) and keeps its message
 * (nodes/shared/errors.ts). No server is needed: a port nothing listens on, a name that does not
 * resolve (`.invalid`, RFC 6761).
 */

const UNRESOLVABLE = 'nonexistent.invalid';

interface OpCase {
	op: string;
	with: Record<string, unknown>;
	/** The node's credential (type and fields) for a server at host:port; none for http. */
	credential?: (host: string, port: number) => { type: string; data: Record<string, unknown> };
	/** Parameters beside op and with. */
	parameters?: Record<string, unknown>;
	/** The request for host:port (http: the URL is in With). */
	withFor?: (host: string, port: number) => Record<string, unknown>;
	/** The port a name that does not resolve is asked on. */
	port: number;
}

const CASES: OpCase[] = [
	{
		op: 'http.request',
		with: {},
		withFor: (host, port) => ({ url: `http://${host}:${port}/tickets` }),
		port: 80,
	},
	{
		op: 'sql.query',
		with: {
			query:
				'SELECT id, updated_at FROM orders WHERE (updated_at, id) > ($1, $2) ORDER BY updated_at, id LIMIT $3',
			cursor: 'updated_at',
			key: 'id',
			from: ['1970-01-01 00:00:00', '0'],
		},
		parameters: { database: 'postgres', items: 'rows' },
		credential: (host, port) => ({
			type: 'postgres',
			data: {
				host,
				port,
				database: 'orders',
				user: 'postgres',
				password: '',
				ssl: 'disable',
				allowUnauthorizedCerts: false,
				maxConnections: 100,
				sshTunnel: false,
			},
		}),
		port: 5432,
	},
	{
		op: 'imap.listUnseen',
		with: { mailbox: 'INBOX' },
		credential: (host, port) => ({
			type: 'durableImapApi',
			data: { host, port, secure: false, user: 'u', password: 'p', allowSelfSigned: false },
		}),
		port: 143,
	},
	{
		op: 'sftp.list',
		with: { folder: '/inbox' },
		credential: (host, port) => ({
			type: 'sftp',
			data: { host, port, username: 'u', password: 'p', privateKey: '', passphrase: '' },
		}),
		port: 22,
	},
	{
		op: 'ftp.list',
		with: { folder: '/inbox' },
		credential: (host, port) => ({
			type: 'ftp',
			data: { host, port, username: 'u', password: 'p' },
		}),
		port: 21,
	},
	{
		op: 's3.list',
		with: { bucket: 'drops' },
		credential: (host, port) => ({
			type: 's3',
			data: {
				endpoint: `http://${host}:${port}`,
				region: 'us-east-1',
				accessKeyId: 'key',
				secretAccessKey: 'secret',
				forcePathStyle: true,
				ignoreSSLIssues: false,
			},
		}),
		port: 9000,
	},
];

describe('network failures of every op in a real n8n (issue 47)', () => {
	let n8n: N8nInstance;

	beforeAll(async () => {
		n8n = await sharedN8n('op-errors');
	}, 180_000);

	afterAll(async () => {
		await n8n?.stop();
	});

	/** A published Poll Trigger on the op, for a server at host:port; resolves with its workflow id. */
	async function publishedPoll(opCase: OpCase, host: string, port: number, label: string) {
		const name = `${opCase.op} ${label}`;
		const credential = opCase.credential?.(host, port);
		const credentialId =
			credential && (await n8n.createCredential(name, credential.type, credential.data));
		const id = await n8n.importWorkflow(
			workflow(
				name,
				[
					node(
						'Poll',
						`${PACKAGE}.pollTrigger`,
						{
							op: opCase.op,
							with: JSON.stringify({ ...opCase.with, ...opCase.withFor?.(host, port) }),
							// One poll in the test's time: the first one's failure is what is read.
							interval: 10,
							intervalUnit: 'minutes',
							id: 'id',
							...opCase.parameters,
						},
						credential && {
							credentials: { [credential.type]: { id: credentialId as string, name } },
						},
					),
				],
				[],
			),
		);
		await n8n.publish(id);
		return id;
	}

	/** The message of the workflow's first failed execution. */
	async function failureMessage(workflowId: string): Promise<string> {
		const executions = await n8n.waitForExecutions(
			workflowId,
			(all) => all.some((execution) => execution.status === 'error'),
			'the failed poll',
			120_000,
		);
		const failed = executions.find((execution) => execution.status === 'error');
		return String((await n8n.execution(failed!.id)).data?.resultData.error?.message);
	}

	test.each(CASES.map((opCase) => [opCase.op, opCase] as const))(
		'%s: a port with no listener and a host that does not resolve each fail naming the op, host and port',
		async (op, opCase) => {
			const closedPort = await freePort();
			const refused = await publishedPoll(opCase, '127.0.0.1', closedPort, 'refused');
			const unresolved = await publishedPoll(opCase, UNRESOLVABLE, opCase.port, 'unresolved');
			const [refusedMessage, unresolvedMessage] = await Promise.all([
				failureMessage(refused),
				failureMessage(unresolved),
			]);
			expect(refusedMessage).toMatch(
				new RegExp(`^${op}: .*127\\.0\\.0\\.1:${closedPort}.*connection refused`),
			);
			expect(unresolvedMessage).toMatch(
				new RegExp(
					`^${op}: .*${UNRESOLVABLE.replace('.', '\\.')}:${opCase.port}.*does not resolve`,
				),
			);
			// n8n's stock text replaced neither.
			for (const message of [refusedMessage, unresolvedMessage])
				expect(message).not.toMatch(/perhaps it is offline|cannot be established/);
			await Promise.all([n8n.unpublish(refused), n8n.unpublish(unresolved)]);
		},
		240_000,
	);
});

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { FtpConnection, ImapConnection, SftpConnection } from '../core/connectors/types';
import type { FakeSystem } from '../test/harness/fakeSystem';
import type { N8nInstance, WorkflowJson } from '../test/harness/n8nInstance';
import { repoRoot } from '../test/harness/paths';
import { DEMO_CALLBACK_SECRET, DEMO_OAUTH_CLIENT } from './demoSource';

export const examplesDir = join(repoRoot, 'examples');

/** What the demo set-up created in an n8n: credential ids by type, workflow ids by example file. */
export interface DemoSetup {
	credentials: Record<string, string>;
	workflows: Record<string, string>;
}

export function exampleFiles(): string[] {
	return existsSync(examplesDir)
		? readdirSync(examplesDir)
				.filter((f) => f.endsWith('.json'))
				.sort()
		: [];
}

/** What the examples talk to: the demo source and, when there are, a mailbox, an SFTP and an FTP server, and an S3 store. */
export interface DemoSystems {
	source: FakeSystem;
	imap?: ImapConnection;
	/** The SFTP example's server, and the folder standing for its `/upload`. */
	sftp?: { connection: SftpConnection; root: string };
	/** The FTP example's server (its user sees the example's `/inbox` at the root of its home). */
	ftp?: FtpConnection;
	/** The S3 example's store with its bucket `drop`: n8n's `s3` credential for it. */
	s3?: Record<string, unknown>;
}

/**
 * Creates the demo credentials (pointing at the demo source, and at the mailbox when given) and imports
 * every example not imported yet, its credentials re-pointed at them. Returns the updated set-up.
 */
export async function installExamples(
	n8n: N8nInstance,
	{ source, imap, sftp, ftp, s3 }: DemoSystems,
	setup: DemoSetup = { credentials: {}, workflows: {} },
): Promise<DemoSetup> {
	if (sftp)
		setup.credentials.sftp ??= await n8n.createCredential('Demo SFTP', 'sftp', {
			privateKey: '',
			passphrase: '',
			password: '',
			...sftp.connection,
		});
	if (ftp) setup.credentials.ftp ??= await n8n.createCredential('Demo FTP', 'ftp', { ...ftp });
	if (s3) setup.credentials.s3 ??= await n8n.createCredential('Demo S3', 's3', s3);
	if (imap)
		setup.credentials.durableImapApi ??= await n8n.createCredential('Demo IMAP', 'durableImapApi', {
			...imap,
		});
	setup.credentials.durableHttpApi ??= await n8n.createCredential(
		'Demo source (HTTP)',
		'durableHttpApi',
		{
			baseUrl: source.baseUrl,
			authentication: 'none',
			testPath: '/health',
		},
	);
	setup.credentials.roundTripCallbackApi ??= await n8n.createCredential(
		'Demo callback signature',
		'roundTripCallbackApi',
		{
			scheme: 'hmac',
			secret: DEMO_CALLBACK_SECRET,
			signatureHeader: 'x-signature',
			toleranceSec: 300,
		},
	);
	setup.credentials.oAuth2Api ??= await n8n.createCredential(
		'Demo OAuth2 (client credentials)',
		'oAuth2Api',
		{
			grantType: 'clientCredentials',
			accessTokenUrl: `${source.baseUrl}/oauth/token`,
			clientId: DEMO_OAUTH_CLIENT.clientId,
			clientSecret: DEMO_OAUTH_CLIENT.clientSecret,
			scope: 'tickets',
			authentication: 'header',
		},
	);
	for (const file of exampleFiles()) {
		if (setup.workflows[file]) continue;
		setup.workflows[file] = await n8n.importWorkflow(
			withCredentials(exampleWorkflow(file, source, sftp?.root), setup.credentials),
		);
	}
	return setup;
}

/** The demo source's address as the examples write it (its default port). */
const EXAMPLE_SOURCE_URL = 'http://127.0.0.1:5680';

/** The SFTP example's folders are under this path on the server. */
const EXAMPLE_SFTP_ROOT = '/upload/';

/**
 * An example as imported: a Base URL written for the demo source points at the one running, and the
 * SFTP example's folders at `sftpRoot` when given.
 */
export function exampleWorkflow(file: string, source: FakeSystem, sftpRoot?: string): WorkflowJson {
	let text = readFileSync(join(examplesDir, file), 'utf8').replaceAll(
		EXAMPLE_SOURCE_URL,
		source.baseUrl,
	);
	if (sftpRoot) text = text.replaceAll(EXAMPLE_SFTP_ROOT, `${sftpRoot}/`);
	return JSON.parse(text) as WorkflowJson;
}

/** Points every node credential of a type at the credential of that type. */
function withCredentials(
	workflow: WorkflowJson,
	credentials: Record<string, string>,
): WorkflowJson {
	const nodes = (
		workflow.nodes as Array<{ credentials?: Record<string, { id: string; name: string }> }>
	).map((node) => ({
		...node,
		credentials: node.credentials
			? Object.fromEntries(
					Object.entries(node.credentials).map(([type, ref]) => [
						type,
						credentials[type] ? { ...ref, id: credentials[type] } : ref,
					]),
				)
			: undefined,
	}));
	return { ...workflow, nodes };
}

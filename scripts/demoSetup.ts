import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { ImapConnection } from '../core/connectors/types';
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

/** What the examples talk to: the demo source and, when there is one, a mailbox for the IMAP example. */
export interface DemoSystems {
	source: FakeSystem;
	imap?: ImapConnection;
}

/**
 * Creates the demo credentials (pointing at the demo source, and at the mailbox when given) and imports
 * every example not imported yet, its credentials re-pointed at them. Returns the updated set-up.
 */
export async function installExamples(
	n8n: N8nInstance,
	{ source, imap }: DemoSystems,
	setup: DemoSetup = { credentials: {}, workflows: {} },
): Promise<DemoSetup> {
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
			withCredentials(exampleWorkflow(file, source), setup.credentials),
		);
	}
	return setup;
}

/** The demo source's address as the examples write it (its default port). */
const EXAMPLE_SOURCE_URL = 'http://127.0.0.1:5680';

/** An example as imported: a Base URL written for the demo source points at the one running. */
export function exampleWorkflow(file: string, source: FakeSystem): WorkflowJson {
	return JSON.parse(
		readFileSync(join(examplesDir, file), 'utf8').replaceAll(EXAMPLE_SOURCE_URL, source.baseUrl),
	) as WorkflowJson;
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

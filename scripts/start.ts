/**
 * The main job: builds this package, installs it into a local n8n on http://localhost:5678 (SQLite,
 * user folder .n8n-dev/), starts the demo push-less source the examples poll, creates the demo
 * credentials, imports the example workflows and prints the editor URL and login. Ctrl-C stops it all.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance, type WorkflowJson } from '../test/harness/n8nInstance';
import { repoRoot } from '../test/harness/paths';
import { DEMO_CALLBACK_SECRET, startDemoSource } from './demoSource';

const N8N_PORT = Number(process.env.N8N_PORT ?? 5678);
const DEMO_SOURCE_PORT = Number(process.env.DEMO_SOURCE_PORT ?? 5680);
const userFolder = join(repoRoot, '.n8n-dev');
const setupFile = join(userFolder, 'demo-setup.json');

interface DemoSetup {
	credentials: Record<string, string>;
	workflows: Record<string, string>;
}

async function main(): Promise<void> {
	step('building the package');
	execFileSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' });
	step('installing the pinned n8n (first time only) and packing the package');
	ensureN8nInstalled();
	packAndPrepareNodesFolder();

	step(`starting the demo source on http://127.0.0.1:${DEMO_SOURCE_PORT}`);
	const source = await startDemoSource(DEMO_SOURCE_PORT);
	step(`starting n8n on http://localhost:${N8N_PORT}`);
	const n8n = await N8nInstance.open({ name: 'dev', userFolder, port: N8N_PORT, env: { N8N_LOG_LEVEL: 'info' } });

	const setup: DemoSetup = existsSync(setupFile) ? JSON.parse(readFileSync(setupFile, 'utf8')) : { credentials: {}, workflows: {} };
	setup.credentials.durableHttpApi ??= await n8n.createCredential('Demo source (HTTP)', 'durableHttpApi', {
		baseUrl: source.baseUrl,
		authentication: 'none',
		testPath: '/health',
	});
	setup.credentials.roundTripCallbackApi ??= await n8n.createCredential('Demo callback signature', 'roundTripCallbackApi', {
		scheme: 'hmac',
		secret: DEMO_CALLBACK_SECRET,
	});
	const examplesDir = join(repoRoot, 'examples');
	for (const file of existsSync(examplesDir) ? readdirSync(examplesDir).filter((f) => f.endsWith('.json')).sort() : []) {
		if (setup.workflows[file]) continue;
		const workflow = withDemoCredentials(JSON.parse(readFileSync(join(examplesDir, file), 'utf8')) as WorkflowJson, setup.credentials);
		setup.workflows[file] = await n8n.importWorkflow(workflow);
		console.log(`  imported examples/${file} as "${workflow.name}"`);
	}
	writeFileSync(setupFile, JSON.stringify(setup, null, 2));

	const { email, password } = N8nInstance.owner;
	console.log(`
n8n with n8n-nodes-durable-triggers is running.

  Editor:       http://localhost:${N8N_PORT}
  Login:        ${email}  /  ${password}
  Demo source:  ${source.baseUrl}  (GET /tickets, GET /inventory, POST /jobs)
  Logs:         ${n8n.logFile}

Open an example workflow, press "Execute step" on its trigger, or publish it. Ctrl-C stops everything.
`);
	let stopping = false;
	const stop = async () => {
		if (stopping) return;
		stopping = true;
		console.log('\nstopping n8n and the demo source…');
		await n8n.stop();
		await source.close();
		process.exit(0);
	};
	process.on('SIGINT', () => void stop());
	process.on('SIGTERM', () => void stop());
}

/** Points every node credential of a type at the demo credential of that type. */
function withDemoCredentials(workflow: WorkflowJson, credentials: Record<string, string>): WorkflowJson {
	const nodes = (workflow.nodes as Array<{ credentials?: Record<string, { id: string; name: string }> }>).map((node) => ({
		...node,
		credentials: node.credentials
			? Object.fromEntries(Object.entries(node.credentials).map(([type, ref]) => [type, credentials[type] ? { ...ref, id: credentials[type] } : ref]))
			: undefined,
	}));
	return { ...workflow, nodes };
}

function step(message: string): void {
	console.log(`[start] ${message}`);
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});

/**
 * The main job: builds this package, installs it into a local n8n on http://localhost:5678 (SQLite,
 * user folder .n8n-dev/), starts the demo push-less source the examples poll and, when Dovecot is
 * installed, a demo mailbox for the IMAP example (a new mail every minute), creates the demo
 * credentials, imports the example workflows and prints the editor URL and login. Ctrl-C stops it all.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { type Dovecot, dovecotBinary } from '../test/harness/dovecot';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance } from '../test/harness/n8nInstance';
import { repoRoot } from '../test/harness/paths';
import { deliverDemoMail, startDemoMailbox } from './demoMailbox';
import { type DemoSetup, installExamples } from './demoSetup';
import { startDemoSource } from './demoSource';

const N8N_PORT = Number(process.env.N8N_PORT ?? 5678);
const DEMO_SOURCE_PORT = Number(process.env.DEMO_SOURCE_PORT ?? 5680);
// Fixed, like the password, so the "Demo IMAP" credential created on the first start stays valid.
const DEMO_IMAP_PORT = Number(process.env.DEMO_IMAP_PORT ?? 5681);
const userFolder = join(repoRoot, '.n8n-dev');
const setupFile = join(userFolder, 'demo-setup.json');

async function main(): Promise<void> {
	step('building the package');
	execFileSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' });
	step('installing the pinned n8n (first time only) and packing the package');
	ensureN8nInstalled();
	packAndPrepareNodesFolder();

	step(`starting the demo source on http://127.0.0.1:${DEMO_SOURCE_PORT}`);
	const source = await startDemoSource(DEMO_SOURCE_PORT);
	// Before n8n, so a published IMAP example finds its mailbox on its first poll.
	let mailbox: Dovecot | undefined;
	let newMail: NodeJS.Timeout | undefined;
	if (dovecotBinary()) {
		step(`starting the demo mailbox on imap://127.0.0.1:${DEMO_IMAP_PORT}`);
		mailbox = await startDemoMailbox(DEMO_IMAP_PORT);
		const { account } = mailbox;
		let delivered = 2;
		newMail = setInterval(() => void deliverDemoMail(account, delivered++).catch((error: Error) => console.error(`[start] demo mail not delivered: ${error.message}`)), 60_000);
	}
	step(`starting n8n on http://localhost:${N8N_PORT}`);
	const n8n = await N8nInstance.open({ name: 'dev', userFolder, port: N8N_PORT, env: { N8N_LOG_LEVEL: 'info' } });

	const previous: DemoSetup | undefined = existsSync(setupFile) ? JSON.parse(readFileSync(setupFile, 'utf8')) : undefined;
	const setup = await installExamples(n8n, { source, imap: mailbox?.account.connection }, previous);
	for (const file of Object.keys(setup.workflows)) console.log(`  examples/${file} is in n8n as workflow ${setup.workflows[file]}`);
	writeFileSync(setupFile, JSON.stringify(setup, null, 2));

	const { email, password } = N8nInstance.owner;
	console.log(`
n8n with n8n-nodes-durable-triggers is running.

  Editor:       http://localhost:${N8N_PORT}
  Login:        ${email}  /  ${password}
  Demo source:  ${source.baseUrl}  (GET /tickets, GET /inventory, POST /jobs)
  Demo mailbox: ${mailbox ? `imap://127.0.0.1:${DEMO_IMAP_PORT}, user ${mailbox.account.connection.user} (credential "Demo IMAP"), a new mail every minute` : NO_MAILBOX}
  Logs:         ${n8n.logFile}

Open an example workflow, press "Execute step" on its trigger, or publish it. Ctrl-C stops everything.
`);
	let stopping = false;
	const stop = async () => {
		if (stopping) return;
		stopping = true;
		console.log('\nstopping n8n and the demo systems…');
		clearInterval(newMail);
		await n8n.stop();
		await source.close();
		await mailbox?.stop();
		process.exit(0);
	};
	process.on('SIGINT', () => void stop());
	process.on('SIGTERM', () => void stop());
}

const NO_MAILBOX = `none: Dovecot is not installed (apt-get install dovecot-imapd, then npm start again).
                Or run examples/support-triage.json on your own mailbox: create a "Durable Triggers IMAP API"
                credential for it and select it in the workflow's "New Support Mail" and "Mark Seen" nodes.`;

function step(message: string): void {
	console.log(`[start] ${message}`);
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});

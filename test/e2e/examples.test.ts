import { startDemoMailbox } from '../../scripts/demoMailbox';
import { exampleFiles, exampleWorkflow, installExamples } from '../../scripts/demoSetup';
import { startDemoSource } from '../../scripts/demoSource';
import type { Dovecot } from '../harness/dovecot';
import type { FakeSystem } from '../harness/fakeSystem';
import type { Execution, N8nInstance } from '../harness/n8nInstance';
import { sharedN8n } from '../harness/shared';
import { freePort } from '../harness/net';
import { S3rver } from '../harness/s3rver';
import { Sshd } from '../harness/sshd';
import { Vsftpd } from '../harness/vsftpd';

/** Every example imports cleanly, keeps its parameters through n8n, and runs against the demo source (or the demo mailbox, sshd, s3rver). */
describe('examples/', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;
	let mailbox: Dovecot;
	let sshd: Sshd;
	let vsftpd: Vsftpd;
	let store: S3rver;
	let workflows: Record<string, string>;

	beforeAll(async () => {
		[source, mailbox, sshd, vsftpd, store] = await Promise.all([
			startDemoSource(await freePort()),
			startDemoMailbox(),
			Sshd.start(),
			Vsftpd.start(),
			S3rver.start({ bucket: 'drop' }),
		]);
		// A partner's file for the SFTP and the FTP example, an object for the S3 example.
		sshd.write('upload/inbox/orders.csv', 'id,name\n1,apples\n');
		vsftpd.write('inbox/orders.csv', 'id,name\n1,apples\n');
		await store.put('in/orders.csv', 'id,name\n1,apples\n');
		n8n = await sharedN8n('examples');
		({ workflows } = await installExamples(n8n, {
			source,
			imap: mailbox.account.connection,
			sftp: { connection: sshd.connection(), root: sshd.path('upload') },
			ftp: vsftpd.connection(),
			s3: store.credential(),
		}));
	});

	afterAll(async () => {
		await n8n?.stop();
		await source?.close();
		await mailbox?.stop();
		await sshd?.stop();
		await vsftpd?.stop();
		await store?.stop();
	});

	test.each(exampleFiles())('%s round-trips through n8n with the same parameters', async (file) => {
		const original = exampleWorkflow(file, source, sshd.path('upload')) as unknown as {
			nodes: Array<{ name: string; type: string; typeVersion: number; parameters: unknown }>;
		};
		const stored = await n8n.getWorkflow(workflows[file]);
		const byName = new Map((stored.nodes as typeof original.nodes).map((n) => [n.name, n]));
		for (const node of original.nodes) {
			expect(byName.get(node.name)).toMatchObject({
				type: node.type,
				typeVersion: node.typeVersion,
				parameters: node.parameters,
			});
		}
	});

	/**
	 * Each example published and waited for side by side: most poll every 30 s, so one after the
	 * other they took 323 s of CI (issue 46). Started by the first case that asks (after beforeAll,
	 * which jest's test.concurrent would not wait for), each case then awaits its own example.
	 */
	let demoRuns: Map<string, Promise<Execution[]>> | undefined;
	function demoRun(file: string): Promise<Execution[]> {
		demoRuns ??= new Map(
			exampleFiles().map((name) => {
				const run = runAgainstDemo(name);
				run.catch(() => undefined); // awaited by its own case
				return [name, run];
			}),
		);
		return demoRuns.get(file)!;
	}
	async function runAgainstDemo(file: string): Promise<Execution[]> {
		const id = workflows[file];
		await n8n.publish(id);
		const executions = await n8n.waitForExecutions(
			id,
			(all) => all.some((e) => e.status === 'success'),
			`a successful run of ${file}`,
			120_000,
		);
		await n8n.unpublish(id);
		return executions;
	}

	test.each(exampleFiles())('%s runs against the demo source', async (file) => {
		const executions = await demoRun(file);
		expect(executions.filter((e) => e.status === 'error')).toEqual([]);
	});
});

import { startDemoMailbox } from '../../scripts/demoMailbox';
import { exampleFiles, exampleWorkflow, installExamples } from '../../scripts/demoSetup';
import { startDemoSource } from '../../scripts/demoSource';
import type { Dovecot } from '../harness/dovecot';
import type { FakeSystem } from '../harness/fakeSystem';
import { N8nInstance } from '../harness/n8nInstance';
import { sharedN8n } from '../harness/shared';
import { freePort } from '../harness/net';
import { Sshd } from '../harness/sshd';
import { Vsftpd } from '../harness/vsftpd';

/** Every example imports cleanly, keeps its parameters through n8n, and runs against the demo source (or the demo mailbox). */
describe('examples/', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;
	let mailbox: Dovecot;
	let sshd: Sshd;
	let vsftpd: Vsftpd;
	let workflows: Record<string, string>;

	beforeAll(async () => {
		[source, mailbox, sshd, vsftpd] = await Promise.all([
			startDemoSource(await freePort()),
			startDemoMailbox(),
			Sshd.start(),
			Vsftpd.start(),
		]);
		// A partner's file for the SFTP example, and one for the FTP example.
		sshd.write('upload/inbox/orders.csv', 'id,name\n1,apples\n');
		vsftpd.write('inbox/orders.csv', 'id,name\n1,apples\n');
		n8n = await sharedN8n('examples');
		({ workflows } = await installExamples(n8n, {
			source,
			imap: mailbox.account.connection,
			sftp: { connection: sshd.connection(), root: sshd.path('upload') },
			ftp: vsftpd.connection(),
		}));
	});

	afterAll(async () => {
		await n8n?.stop();
		await source?.close();
		await mailbox?.stop();
		await sshd?.stop();
		await vsftpd?.stop();
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

	test.each(exampleFiles())('%s runs against the demo source', async (file) => {
		const id = workflows[file];
		await n8n.publish(id);
		const executions = await n8n.waitForExecutions(
			id,
			(all) => all.some((e) => e.status === 'success'),
			`a successful run of ${file}`,
			120_000,
		);
		expect(executions.filter((e) => e.status === 'error')).toEqual([]);
		await n8n.unpublish(id);
	});
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
	type Execution,
	type N8nInstance,
	nodeOutput,
	type WorkflowJson,
} from '../harness/n8nInstance';
import type { UserFilesServer } from '../harness/userFilesServer';

/**
 * The partner-drop examples (examples/sftp-partner-drop.json, ftp-partner-drop.json) as the SFTP and
 * FTP suites run them: one case, two protocols.
 */

/**
 * An example as a test imports it: `replacements` applied to its text (its credential, its folders),
 * its trigger polling every 5 s and a file finished once unchanged for as long.
 */
export function partnerDropExample(
	file: string,
	replacements: Record<string, string>,
): WorkflowJson {
	let text = readFileSync(join(__dirname, '../../examples', file), 'utf8');
	for (const [from, to] of Object.entries(replacements)) text = text.replaceAll(from, to);
	const parsed = JSON.parse(text) as WorkflowJson;
	const trigger = (
		parsed.nodes as Array<{ name: string; parameters: Record<string, unknown> }>
	).find((n) => n.name === 'New Finished File')!;
	trigger.parameters = {
		...trigger.parameters,
		with: JSON.stringify({ ...JSON.parse(String(trigger.parameters.with)), unchangedForSec: 5 }),
		interval: 5,
		intervalUnit: 'seconds',
	};
	return parsed;
}

/**
 * A file written over three polls starts once, after it is complete; the run downloads it, reads the
 * CSV and moves it to processed/; two more polls start nothing. `folder` holds `inbox/` and
 * `processed/` on disk; `listedPath` is the file's path as the op lists it; `polled(n)` resolves once
 * n more polls have listed the folder. Resolves with the run.
 */
export async function slowUploadStartsOnce(
	n8n: N8nInstance,
	example: WorkflowJson,
	{
		server,
		folder,
		listedPath,
		polled,
	}: {
		server: UserFilesServer;
		folder: string;
		listedPath: string;
		polled: (count: number) => Promise<void>;
	},
): Promise<Execution> {
	const inboxFile = `${folder}/inbox/orders.csv`;
	server.mkdir(`${folder}/inbox`);
	const id = await n8n.importWorkflow(example);
	const header = 'id,name\n';
	server.write(inboxFile, header);
	await n8n.publish(id);
	// Each part lands between two polls' listings.
	for (const row of ['1,apples\n', '2,pears\n', '3,plums\n']) {
		await polled(1);
		server.write(inboxFile, row, { append: true });
	}
	const [run] = await n8n.waitForFinishedExecutions(id, 1);
	const content = `${header}1,apples\n2,pears\n3,plums\n`;
	expect(run.status).toBe('success');
	expect(nodeOutput(run, 'New Finished File')).toEqual([
		expect.objectContaining({ path: listedPath, size: Buffer.byteLength(content) }),
	]);
	expect(nodeOutput(run, 'Read CSV')).toEqual([
		{ id: '1', name: 'apples' },
		{ id: '2', name: 'pears' },
		{ id: '3', name: 'plums' },
	]);
	const binary = run.data?.resultData.runData.Download?.[0]?.data?.main[0]?.[0] as
		| { binary?: { data?: { fileName?: string } } }
		| undefined;
	expect(binary?.binary?.data?.fileName).toBe('orders.csv');
	expect(server.exists(inboxFile)).toBe(false);
	expect(readFileSync(server.path(`${folder}/processed/orders.csv`), 'utf8')).toBe(content);
	// Two more polls: nothing else starts.
	await polled(2);
	expect(await n8n.executions(id)).toHaveLength(1);
	await n8n.unpublish(id);
	return run;
}

import { randomUUID } from 'node:crypto';

import type { WorkflowJson } from '../harness/n8nInstance';

export const PACKAGE = 'n8n-nodes-durable-triggers';

export interface NodeJson {
	id: string;
	name: string;
	type: string;
	typeVersion: number;
	position: [number, number];
	parameters: Record<string, unknown>;
	credentials?: Record<string, { id: string; name: string }>;
	webhookId?: string;
}

export function node(
	name: string,
	type: string,
	parameters: Record<string, unknown>,
	extra: Partial<NodeJson> = {},
): NodeJson {
	return { id: randomUUID(), name, type, typeVersion: 1, position: [0, 0], parameters, ...extra };
}

/** A Set node that marks which branch a run took and keeps the item. */
export function marker(name: string): NodeJson {
	return node(
		name,
		'n8n-nodes-base.set',
		{
			mode: 'manual',
			includeOtherFields: true,
			assignments: {
				assignments: [{ id: randomUUID(), name: 'branch', value: name, type: 'string' }],
			},
		},
		{ typeVersion: 3.4 },
	);
}

/** An n8n Webhook trigger that answers at once, so tests can start runs over HTTP. */
export function webhookTrigger(name: string, path: string): NodeJson {
	return node(
		name,
		'n8n-nodes-base.webhook',
		{ httpMethod: 'POST', path, responseMode: 'onReceived', options: {} },
		{ typeVersion: 2, webhookId: randomUUID() },
	);
}

/** Chains nodes: each [from, to, outputIndex?] connects `from`'s output to `to`. */
export function workflow(
	name: string,
	nodes: NodeJson[],
	links: Array<[string, string, number?]>,
): WorkflowJson {
	const connections: Record<
		string,
		{ main: Array<Array<{ node: string; type: 'main'; index: number }>> }
	> = {};
	nodes.forEach((n, i) => (n.position = [i * 240, (i % 2) * 120]));
	for (const [from, to, output = 0] of links) {
		const main = (connections[from] ??= { main: [] }).main;
		while (main.length <= output) main.push([]);
		main[output].push({ node: to, type: 'main', index: 0 });
	}
	return { name, nodes, connections, settings: { executionOrder: 'v1' } };
}

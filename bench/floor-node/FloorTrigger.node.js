'use strict';
/**
 * n8n's own floor for the Poll Trigger's end-to-end benchmark (bench/pollEndToEnd.bench.ts): what n8n
 * costs for the same runs and the same size of static data when the trigger does nothing else. On
 * activation it calls `Activated URL` (the benchmark takes its start time as it answers, as it does
 * for the Poll Trigger's poll; the call reports n8n's V8 heap limit), stores a string of `State
 * Bytes` characters in the node's static data, and emits `Runs` runs of one item of `Item Bytes` of
 * JSON each, under a plain deduplication key per run: n8n checks a key per run for the Poll
 * Trigger's runs too, and that check is n8n's cost, not the package's.
 *
 * The state is stored once, as the Poll Trigger stores its state once per poll: n8n writes the whole
 * static data on each emit while it is marked changed, and clears the mark only when that write has
 * finished, so the first run is emitted alone and the rest once n8n has written it.
 *
 * Plain JavaScript, no build step and no imports from n8n: it is loaded as a community package
 * installed beside this package (test/harness/install.ts, packAndPrepareNodesFolder's `alongside`).
 */
const { getHeapStatistics } = require('node:v8');

const WRITE_CHECK_MS = 5;
const WRITE_WAIT_MS = 60_000;

class FloorTrigger {
	description = {
		displayName: 'Floor Trigger',
		name: 'floorTrigger',
		group: ['trigger'],
		version: 1,
		description: 'Benchmark floor: stores a state of a given size once and emits N one-item runs',
		defaults: { name: 'Floor Trigger' },
		inputs: [],
		outputs: ['main'],
		properties: [
			{ displayName: 'Activated URL', name: 'activatedUrl', type: 'string', default: '' },
			{ displayName: 'Runs', name: 'runs', type: 'number', default: 300 },
			{ displayName: 'Item Bytes', name: 'itemBytes', type: 'number', default: 100 },
			{ displayName: 'State Bytes', name: 'stateBytes', type: 'number', default: 0 },
		],
	};

	async trigger() {
		const activatedUrl = this.getNodeParameter('activatedUrl');
		const runs = this.getNodeParameter('runs');
		const itemBytes = this.getNodeParameter('itemBytes');
		const stateBytes = this.getNodeParameter('stateBytes');
		const activation = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
		let stopped = false;
		const burst = async () => {
			await this.helpers.httpRequest({
				url: activatedUrl,
				qs: { heapLimitBytes: getHeapStatistics().heap_size_limit },
			});
			this.getWorkflowStaticData('node').state = 'x'.repeat(stateBytes);
			for (let i = 0; i < runs && !stopped; i++) {
				if (i === 1) await staticDataWritten(this);
				this.emit(
					[[{ json: sizedItem(`floor-${i}`, itemBytes) }]],
					undefined,
					undefined,
					`floor:${activation}:${i}`,
				);
			}
		};
		burst().catch((error) => this.logger.error(`Floor Trigger: ${error.message}`));
		return {
			closeFunction: async () => {
				stopped = true;
			},
		};
	}
}

/** `{ id, body }` padded so that its JSON is `bytes` long, as the benchmark builds the Poll Trigger's items. */
function sizedItem(id, bytes) {
	const bare = JSON.stringify({ id, body: '' }).length;
	return { id, body: 'x'.repeat(Math.max(0, bytes - bare)) };
}

/**
 * Resolves once n8n has written the changed static data: the workflow's whole static data, which
 * n8n-core's trigger context keeps on its `workflow` (n8n 2.41.1), carries n8n's `__dataChanged` mark.
 */
async function staticDataWritten(context) {
	const root = context.workflow?.staticData;
	const deadline = Date.now() + WRITE_WAIT_MS;
	while (root?.__dataChanged === true && Date.now() < deadline)
		await new Promise((resolve) => setTimeout(resolve, WRITE_CHECK_MS));
}

module.exports = { FloorTrigger };

import { runWorkerKillChaos, type WorkerKillResult } from '../harness/chaos';
import { N8nInstance } from '../harness/n8nInstance';

/**
 * Queue mode only (E2E_TOPOLOGY=queue; the single-process run leaves this file out): a worker killed
 * with SIGKILL while it executes runs. Nothing the triggers started is lost or started again, and the
 * test reports what n8n did with the runs the worker held.
 */
describe('SIGKILL of a queue-mode worker during runs', () => {
	let n8n: N8nInstance;
	const results: WorkerKillResult[] = [];

	beforeAll(async () => {
		n8n = await N8nInstance.launch('worker-kill', { N8N_EVENTBUS_RECOVERY_MODE: 'simple' });
		expect(n8n.topology).toBe('queue');
	});

	afterAll(async () => {
		for (const r of results) {
			console.log(
				`${r.case}: expected ${r.expected}, lost ${r.lost}, repeated ${r.repeated}; the worker held ${r.killedRuns} run(s): ${r.killedRunOutcomes.join(' | ')}; ` +
					`n8n recorded their end ${r.settledAfterSec} s after the kill; ${r.notRerun} of them were not run again`,
			);
		}
		await n8n?.stop();
	});

	test.each(['poll', 'schedule'] as const)('%s: lost = 0, repeated = 0; the killed runs end in error and are not run again', async (kind) => {
		const result = await runWorkerKillChaos(n8n, kind);
		results.push(result);
		expect(result).toMatchObject({ lost: 0, repeated: 0 });
		expect(result.killedRuns).toBeGreaterThan(0);
		expect(result.notRerun).toBe(result.killedRuns);
		expect(result.killedRunOutcomes.every((outcome) => outcome.startsWith('error: '))).toBe(true);
	}, 600_000);
});

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
		// n8n's defaults find a dead worker's job after its 60 s lock and a 30 s stalled-job check
		// (`npm run chaos:queue` measures them); shorter here, so the test fits in CI. The main then
		// re-reads the execution for 30 s (not configurable) before it records the failure.
		n8n = await N8nInstance.launch('worker-kill', {
			N8N_EVENTBUS_RECOVERY_MODE: 'simple',
			QUEUE_WORKER_LOCK_DURATION: '15000',
			QUEUE_WORKER_LOCK_RENEW_TIME: '5000',
			QUEUE_WORKER_STALLED_INTERVAL: '5000',
		});
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

	test.each(['poll', 'schedule'] as const)(
		'%s: lost = 0, repeated = 0; the killed runs end, failed or crashed, and are not run again',
		async (kind) => {
			const result = await runWorkerKillChaos(n8n, kind);
			results.push(result);
			expect(result).toMatchObject({ lost: 0, repeated: 0 });
			expect(result.killedRuns).toBeGreaterThan(0);
			// Each item or window the killed runs carried ran exactly once: n8n does not run them again.
			expect(result.notRerun).toBeGreaterThan(0);
			// n8n ends them either way: failed by Bull's stalled-job check, or recorded crashed by the
			// main when it learns the worker's job is gone first (both seen in CI runs).
			for (const outcome of result.killedRunOutcomes) expect(outcome).toMatch(/^(error|crashed): /);
		},
		600_000,
	);
});

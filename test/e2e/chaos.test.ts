import {
	CHAOS_N8N_ENV,
	chaosTable,
	type ChaosResult,
	pollChaosCases,
	runPollChaos,
	runScheduleChaos,
	scheduleChaosCases,
} from '../harness/chaos';
import { N8nInstance } from '../harness/n8nInstance';
import { isN8n1 } from '../harness/paths';

/**
 * Runs that may start again per kill. n8n 2.x refuses a re-emitted run by its deduplication key:
 * none. n8n 1.x has no such key; the triggers settle each run as soon as n8n confirms it exists and
 * emit one at a time, so a kill can leave at most the run being emitted and the one before it (or,
 * after a burst, its last run) unsettled (nodes/shared/emitRuns.ts). The chaos counts items: a
 * repeated batch run repeats each of its items.
 */
const MAX_REPEATS_PER_KILL = isN8n1 ? 2 : 0;
const BURST = 30;

/**
 * The short chaos run (`npm run chaos` does 20 kills per case): n8n is killed with SIGKILL at a random
 * moment while a burst of runs is being started (a poll with new items over a remembered history; a
 * schedule's catch-up after downtime), restarted, and every item or window that should have run is
 * counted: lost = 0 and repeated = 0.
 */
describe('SIGKILL during bursts (short chaos run)', () => {
	let n8n: N8nInstance;
	const results: ChaosResult[] = [];

	beforeAll(async () => {
		n8n = await N8nInstance.launch('chaos', CHAOS_N8N_ENV);
	});

	afterAll(async () => {
		if (results.length > 0) console.log(`Chaos (short run)\n${chaosTable(results)}`);
		await n8n?.stop();
	});

	test.each(pollChaosCases(2_000, BURST).map((chaos) => [chaos.name, chaos] as const))(
		`poll %s: 2 kills, lost = 0, repeated runs ≤ ${MAX_REPEATS_PER_KILL} per kill`,
		async (_name, chaos) => {
			const result = await runPollChaos(n8n, chaos, { kills: 2 });
			results.push(result);
			expect(result).toMatchObject({ case: chaos.name, kills: 2, expected: 60, lost: 0 });
			const itemsPerRun = chaos.parameters.oneRunPerItem === false ? BURST : 1;
			expect(result.repeated).toBeLessThanOrEqual(
				MAX_REPEATS_PER_KILL * result.kills * itemsPerRun,
			);
		},
	);

	test.each(scheduleChaosCases().map((chaos) => [chaos.name, chaos] as const))(
		`%s: 2 kills, lost = 0, repeated runs ≤ ${MAX_REPEATS_PER_KILL} per kill`,
		async (_name, chaos) => {
			const result = await runScheduleChaos(n8n, chaos, { kills: 2, downtimeMs: 20_000 });
			results.push(result);
			expect(result.expected).toBeGreaterThan(6);
			expect(result).toMatchObject({ case: chaos.name, kills: 2, lost: 0 });
			expect(result.repeated).toBeLessThanOrEqual(MAX_REPEATS_PER_KILL * result.kills);
		},
	);
});

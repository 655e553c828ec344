import { CHAOS_N8N_ENV, chaosTable, type ChaosResult, pollChaosCases, runPollChaos, runScheduleChaos, scheduleChaosCases } from '../harness/chaos';
import { N8nInstance } from '../harness/n8nInstance';

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

	test.each(pollChaosCases(2_000, 30).map((chaos) => [chaos.name, chaos] as const))('poll %s: 2 kills, lost = 0, repeated = 0', async (_name, chaos) => {
		const result = await runPollChaos(n8n, chaos, { kills: 2 });
		results.push(result);
		expect(result).toMatchObject({ case: chaos.name, kills: 2, expected: 60, lost: 0, repeated: 0 });
	});

	test.each(scheduleChaosCases().map((chaos) => [chaos.name, chaos] as const))('%s: 2 kills, lost = 0, repeated = 0', async (_name, chaos) => {
		const result = await runScheduleChaos(n8n, chaos, { kills: 2, downtimeMs: 20_000 });
		results.push(result);
		expect(result.expected).toBeGreaterThan(6);
		expect(result).toMatchObject({ case: chaos.name, kills: 2, lost: 0, repeated: 0 });
	});
});

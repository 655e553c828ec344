import { checkPollModel } from './poll/index';

/** The Poll Trigger's simulation (test/model/poll): random schedules over every style. */
describe('Poll Trigger model', () => {
	// A guard against a hang, not a speed check: `npm run model` measures the speed (about 370
	// schedules a second on the 2-core machine when quiet). npm test runs the unit project niced
	// beside the e2e lanes.
	it('holds the properties over 15,000 random schedules of every style (seed 44)', async () => {
		await expect(checkPollModel({ runs: 15_000, seed: 44 })).resolves.toBeDefined();
	}, 1_200_000);
});

// Runs the longest e2e suites first, so that with two jest workers the last suite to start is a short
// one. Jest's default order is by recorded duration, and by file size on a fresh clone (CI), where the
// longest suites (the chaos run, the start script's kills) are among the smallest files.
const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/** Minutes each suite took on the 2-core machine (npm test's per-suite figures), longest first. */
const MINUTES = {
	'chaos.test.ts': 6,
	'startScript.test.ts': 5.5,
	'roundTripWait.test.ts': 4,
	'pollTrigger.test.ts': 4,
	'durableScheduleTrigger.test.ts': 3.5,
	'pollRunSettlement.test.ts': 3,
	'imapTriage.test.ts': 2,
	'imapConnector.test.ts': 2,
	'credentials.test.ts': 1.5,
	'editor.test.ts': 1.5,
};

class LongestFirstSequencer extends Sequencer {
	sort(tests) {
		const minutes = (test) => MINUTES[basename(test.path)] ?? 0;
		return [...super.sort(tests)].sort((a, b) => minutes(b) - minutes(a));
	}
}

module.exports = LongestFirstSequencer;

// Runs the longest e2e suites first, so that with several jest workers the last suite to start is a short
// one. Jest's default order is by recorded duration, and by file size on a fresh clone (CI), where the
// longest suites (the chaos run, the start script's kills) are among the smallest files.
const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Seconds each suite took in stop 42's CI (2026-12-03, on CI's 2-core machine, the three lanes side by
 * side; historyStore before its second kill round went, sftpSource before its kill case went: both
 * covered by owedSources and the first round), longest first. The queue-mode start script's suite from
 * stop 31's; s3Source's from a local run (2026-12-03, load average falling from 16 to 1). Suites not named here run last.
 */
const SECONDS = {
	'historyStore.test.ts': 1040,
	'chaos.test.ts': 785,
	'owedItems.test.ts': 805,
	'owedSources.test.ts': 720,
	'startScriptQueue.test.ts': 670,
	'pollRunSettlement.test.ts': 394,
	'durableScheduleTrigger.test.ts': 390,
	'pollTrigger.test.ts': 362,
	'retryPolicy.test.ts': 259,
	'startScript.test.ts': 255,
	'pagination.test.ts': 216,
	's3Source.test.ts': 186,
	'sqlSource.test.ts': 185,
	'roundTripWait.test.ts': 173,
	'sftpSource.test.ts': 167,
	'imapTriage.test.ts': 135,
	'examples.test.ts': 110,
	'editor.test.ts': 79,
	'roundTripFixedUrl.test.ts': 77,
	'credentials.test.ts': 61,
	'imapConnector.test.ts': 8,
	'foundation.test.ts': 6,
};

class LongestFirstSequencer extends Sequencer {
	sort(tests) {
		const seconds = (test) => SECONDS[basename(test.path)] ?? 0;
		return [...super.sort(tests)].sort((a, b) => seconds(b) - seconds(a));
	}
}

module.exports = LongestFirstSequencer;

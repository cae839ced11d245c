"""What the tests (and the benchmarks) share: servers, browsers, AppTest helpers, fixtures."""

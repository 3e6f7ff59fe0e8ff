"""End-to-end tests of `axis run`: real projects, real agent processes, no mocks."""

"""Loop 9 (article 0x0C): preemption, resume and foreign readiness; the lesson's incident.

- `kinds`: the check kinds `preemption_resume` and `incident_replay`, and the mutation target
  of preemption fixtures (light: the oracles load when a check runs);
- `oracle`: intents, foreign receipts, suspension epochs and resume tickets over a fixture;
- `incident`: the lesson's incident (section 8) replayed under budget variants.
"""

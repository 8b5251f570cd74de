"""The capture plan as Kubernetes Jobs: one Job per phase (apply them one after the other),
each a pod whose server and client containers share localhost and the captures volume; the
client marks the phase done with a file, the server container then stops its profiler-wrapped
server so the report is written and the Job completes."""

from __future__ import annotations

from typing import Any

import yaml

from crossview.capture.plan import Plan, client_script, server_script


def _job(plan: Plan, phase_index: int) -> dict[str, Any]:
    p, ph = plan.params, plan.phases[phase_index]
    out = str(p["out"])
    mounts: list[dict[str, Any]] = [{"name": "captures", "mountPath": out},
              {"name": "models", "mountPath": "/models", "readOnly": True}]
    server = {"name": "server", "image": p["image"],
              "command": ["bash", "-lc", server_script(ph, out)],
              "resources": {"limits": {"nvidia.com/gpu": int(p["tp"])}},
              "volumeMounts": [dict(m) for m in mounts]}  # copies: no YAML anchors
    client = {"name": "client", "image": p["client_image"],
              "command": ["bash", "-lc", client_script(ph, out)],
              "volumeMounts": [dict(m) for m in mounts]}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"crossview-capture-{plan.engine}-{ph.id.lower()}",
                     "namespace": p["namespace"],
                     "labels": {"app.kubernetes.io/name": "crossview-capture",
                                "crossview/phase": ph.id},
                     "annotations": {"crossview/title": ph.title, "crossview/why": ph.why}},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [server, client],
            "volumes": [{"name": "captures",
                         "persistentVolumeClaim": {"claimName": p["pvc"]}},
                        {"name": "models",
                         "persistentVolumeClaim": {"claimName": p["models_pvc"],
                                                   "readOnly": True}}]}}}}


def render_k8s(plan: Plan) -> str:
    head = (f"# crossview capture plan --engine {plan.engine} --format k8s: one Job per phase;\n"
            "# apply in order and wait for each: kubectl apply -f job.yaml && kubectl wait "
            "--for=condition=complete --timeout=2h job/<name>\n")
    docs = [_job(plan, i) for i in range(len(plan.phases))]
    return head + yaml.safe_dump_all(docs, sort_keys=False, width=100)

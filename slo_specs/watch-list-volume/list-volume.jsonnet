// LIST volume per resource: one spec per resource from lib/list-volume.libsonnet.
// Schema: ../../compiler/schemas/slo.schema.json (kind: SLO); evaluated by slo-compiler, imports
// confined to slo_specs/.
//
// Ceilings are LIST/s per (cluster, scope) on a 7,500-node cluster. The reference point
// for every one of them: a per-node agent that LISTs once a minute from all 7,500 nodes
// produces 125 LIST/s, and informers that start once and then watch produce almost none.
local lib = import 'lib/list-volume.libsonnet';

[
  lib.listVolume(
    'list-volume-pods', 'pods', 50,
    // Normal cluster-scope pod LISTs stay under 5/s (signals.md B1); each costs 10 APF
    // seats, so 50/s keeps about 500 seats busy, two apiservers' workload-low share.
    'Healthy pod LISTs stay under 5/s per scope; each cluster-scope pod LIST costs 10 APF seats, so 50/s sustained starves workload-low.',
    5,
    { description: 'A DaemonSet LISTs all pods cluster-wide from every node once a minute: 125 LIST/s.', scope: 'cluster', value: 125 },
  ),
  lib.listVolume(
    'list-volume-nodes', 'nodes', 20,
    // Kubelets and kube-proxy LIST only their own Node (field selector) when they start;
    // a node-image rollout of 10% of nodes at a time stays under a few per second.
    'Node LISTs come from kubelets and kube-proxy starting (own Node by field selector), a few per second even during a rollout; 20/s sustained is an agent polling all 7,500 Nodes.',
    2,
    { description: 'A CNI agent on every node relists all Nodes once a minute: 125 LIST/s of 7,500 objects each.', scope: 'cluster', value: 125 },
  ),
  lib.listVolume(
    'list-volume-endpointslices', 'endpointslices', 20,
    // kube-proxy and CoreDNS LIST EndpointSlices once at start and then watch; a
    // kube-proxy rollout at maxUnavailable 10% is 750 LISTs spread over minutes.
    'EndpointSlice LISTs come from kube-proxy and CoreDNS starting, under 10/s even during a kube-proxy rollout; 20/s sustained means they are crash-looping or a new per-node client lists instead of watching.',
    1,
    { description: 'kube-proxy crash-loops on every node after a bad config push; each restart relists every EndpointSlice: 60 LIST/s.', scope: 'cluster', value: 60 },
  ),
  lib.listVolume(
    'list-volume-events', 'events', 100,
    // Events are mostly LISTed per namespace (kubectl describe, dashboards). 100/s is
    // just under one poll a minute from every node (125/s): the agents that took
    // OpenAI's 1,000-node cluster down were exactly such Event pollers.
    'Event LISTs come from kubectl describe and dashboards, tens per second at most; 100/s is just under a per-node agent polling Events once a minute (125/s), the pattern behind OpenAI\'s Event LIST storm.',
    15,
    { description: 'A monitoring agent on every node polls all Events once a minute: 125 LIST/s at cluster scope.', scope: 'cluster', value: 125 },
  ),
  lib.listVolume(
    'list-volume-configmaps', 'configmaps', 100,
    // The kubelet LISTs (then watches) each ConfigMap a new pod mounts, namespace scope
    // with a name field selector: a 1,000-pod gang with 3 ConfigMaps each is about
    // 3,000 LISTs over a minute or two, 25-50/s, and it does not last 5 minutes.
    'The kubelet LISTs each ConfigMap a new pod mounts (namespace scope, by name): a 1,000-pod gang is 25-50/s for a minute or two; 100/s for 5 minutes is a client polling ConfigMaps.',
    10,
    { description: 'A config-reloader sidecar in every training pod re-LISTs its ConfigMap every 30 s: 250 LIST/s at namespace scope.', scope: 'namespace', value: 250 },
  ),
  lib.listVolume(
    'list-volume-secrets', 'secrets', 50,
    // Same kubelet mechanism as ConfigMaps, but fewer pods mount Secrets (service
    // account tokens are projected, not Secrets); Secret LIST volume is also a
    // security signal (a scanner or a leaked credential enumerating namespaces).
    'Kubelets LIST only the Secrets that new pods mount (tokens are projected), a few per second; 50/s for 5 minutes is a poller or something enumerating Secrets, worth a look for security reasons too.',
    3,
    { description: 'A security scanner LISTs Secrets in every namespace in a tight loop: 80 LIST/s at namespace scope.', scope: 'namespace', value: 80 },
  ),
]

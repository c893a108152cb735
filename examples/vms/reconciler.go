package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store/apistore"
)

// VMSpec is a VM as users want it; VMStatus as the operator saw it.
type (
	VMSpec struct {
		Size int `json:"size"`
	}
	VMStatus struct {
		External external.Record `json:"external"`
		IP       string          `json:"ip,omitempty"`
		Size     int             `json:"size,omitempty"`
	}
	VM = resource.Resource[VMSpec, VMStatus]
)

// The tags the operator puts on each VM it makes: its owner, to list
// them by tag, and its mark (external.Mark), to tell which key and which
// create each VM is for.
const (
	tagOwner = "converge-owner"
	tagMark  = "converge-mark"
	owner    = "vmop"
)

// The sizes the API makes: a spec outside them is refused where it is
// written (admission), not found by a 422 after the fact.
const minSize, maxSize = 1, 8

// admission is the VM kind's rule, which the store's API-server layer
// runs on every spec write: a size the API cannot make is refused with
// the field named, and nothing is stored.
func admission() apistore.Admission[*VM] {
	return apistore.Admission[*VM]{Validate: func(vm *VM) error {
		if vm != nil && (vm.Spec.Size < minSize || vm.Spec.Size > maxSize) {
			return apistore.FieldErrorf("spec.size", "%d: want %d to %d", vm.Spec.Size, minSize, maxSize)
		}
		return nil
	}}
}

// errUnreachable marks an error of the transport: the API does not serve.
var errUnreachable = errors.New("vm api unreachable")

// vms is the domain of the operator, the whole of it: how to observe,
// create, resize and delete a VM, and list the VMs it tagged. The kit
// (reconcile/kit/external) does the rest.
type vms struct {
	base string
	http *http.Client
}

func (v *vms) world() external.World[VMSpec, VMStatus] {
	return external.World[VMSpec, VMStatus]{Observe: v.observe, Create: v.create, Update: v.update, Delete: v.delete, List: v.list}
}

func (v *vms) observe(ctx context.Context, d external.Desired[VMSpec]) (external.Observation[VMStatus], error) {
	var vm apiVM
	found, err := v.call(ctx, http.MethodGet, "/vms/"+url.PathEscape(d.Name), nil, &vm)
	if err != nil || !found {
		return external.Observation[VMStatus]{State: external.Absent}, err
	}
	o := external.Observation[VMStatus]{State: external.UpToDate, Status: VMStatus{IP: vm.IP, Size: vm.Size},
		Fingerprint: drift.Fingerprint(strconv.Itoa(vm.Size))}
	if vm.Size != d.Spec.Size {
		o.State = external.Differs
	}
	return o, nil
}

func (v *vms) create(ctx context.Context, d external.Desired[VMSpec]) (string, error) {
	var vm apiVM
	body := apiVM{Size: d.Spec.Size, Tags: map[string]string{tagOwner: owner, tagMark: d.Mark.String()}}
	_, err := v.call(ctx, http.MethodPost, "/vms", body, &vm)
	return vm.ID, err
}

func (v *vms) update(ctx context.Context, d external.Desired[VMSpec], _ external.Observation[VMStatus]) error {
	_, err := v.call(ctx, http.MethodPut, "/vms/"+url.PathEscape(d.Name), map[string]int{"size": d.Spec.Size}, nil)
	return err
}

func (v *vms) delete(ctx context.Context, d external.Desired[VMSpec]) error {
	_, err := v.call(ctx, http.MethodDelete, "/vms/"+url.PathEscape(d.Name), nil, nil)
	return err // a VM already gone (404) is done
}

func (v *vms) list(ctx context.Context) ([]external.Listed, error) {
	var all []apiVM
	if _, err := v.call(ctx, http.MethodGet, "/vms?tag="+url.QueryEscape(tagOwner+"="+owner), nil, &all); err != nil {
		return nil, err
	}
	out := make([]external.Listed, len(all))
	for i, vm := range all {
		m, _ := external.ParseMark(vm.Tags[tagMark])
		out[i] = external.Listed{Name: vm.ID, Mark: m, Fingerprint: drift.Fingerprint(strconv.Itoa(vm.Size))}
	}
	return out, nil
}

// call makes one request of the API, decoding its answer into out; it
// reports false for 404. A 422 is the API refusing the VM
// (external.Reject); a transport error is errUnreachable.
func (v *vms) call(ctx context.Context, method, path string, in, out any) (found bool, err error) {
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			return false, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, v.base+path, &body)
	if err != nil {
		return false, err
	}
	resp, err := v.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	defer resp.Body.Close()
	msg := func() string { var b bytes.Buffer; _, _ = b.ReadFrom(resp.Body); return b.String() }
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return false, nil
	case resp.StatusCode == http.StatusUnprocessableEntity:
		return false, external.Reject(fmt.Errorf("%s %s: %s", method, path, msg()))
	case resp.StatusCode >= 300:
		return false, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg())
	case out != nil:
		return true, json.NewDecoder(resp.Body).Decode(out)
	}
	return true, nil
}

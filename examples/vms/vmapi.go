package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// vmAPI is the external system: an HTTP API of virtual machines as many
// clouds offer one, and as the operator must live with it. POST /vms
// makes a new VM at every call (there is no idempotency key: a POST
// repeated after a lost answer makes a second VM); GET /vms?tag=K=V lists
// the VMs carrying a tag, GET, PUT and DELETE /vms/ID read, resize and
// delete one.
type vmAPI struct {
	mu     sync.Mutex
	vms    map[string]apiVM
	next   int
	posts  int
	loseAt int // the POST whose answer is lost (0: none)
}

// apiVM is a VM as the API shows it.
type apiVM struct {
	ID   string            `json:"id"`
	Size int               `json:"size"`
	IP   string            `json:"ip"`
	Tags map[string]string `json:"tags"`
}

func newVMAPI() *vmAPI { return &vmAPI{vms: map[string]apiVM{}} }

// loseNextAnswer makes the next POST make its VM and then drop the
// connection, as a network that fails at the wrong moment does.
func (a *vmAPI) loseNextAnswer() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loseAt = a.posts + 1
}

// counts returns how many POSTs were made and how many VMs exist.
func (a *vmAPI) counts() (posts, vms int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.posts, len(a.vms)
}

// remove deletes a VM behind the operator's back.
func (a *vmAPI) remove(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.vms, id)
}

func (a *vmAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, one := strings.CutPrefix(r.URL.Path, "/vms/")
	switch {
	case r.URL.Path == "/vms" && r.Method == http.MethodPost:
		a.create(w, r)
	case r.URL.Path == "/vms" && r.Method == http.MethodGet:
		a.list(w, r.URL.Query().Get("tag"))
	case !one:
		http.NotFound(w, r)
	case r.Method == http.MethodGet:
		vm, ok := a.vms[id]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(vm)
	case r.Method == http.MethodPut:
		a.resize(w, r, id)
	case r.Method == http.MethodDelete:
		delete(a.vms, id)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (a *vmAPI) create(w http.ResponseWriter, r *http.Request) {
	var vm apiVM
	if err := json.NewDecoder(r.Body).Decode(&vm); err != nil || vm.Size < 1 || vm.Size > 8 {
		http.Error(w, "size must be 1 to 8", http.StatusUnprocessableEntity)
		return
	}
	a.posts++
	a.next++
	vm.ID, vm.IP = "vm-"+strconv.Itoa(a.next), "10.0.0."+strconv.Itoa(a.next)
	a.vms[vm.ID] = vm
	if a.posts == a.loseAt {
		panic(http.ErrAbortHandler) // the VM is made; its answer is lost
	}
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(vm)
}

func (a *vmAPI) list(w http.ResponseWriter, tag string) {
	k, v, _ := strings.Cut(tag, "=")
	out := []apiVM{}
	for _, vm := range a.vms {
		if tag == "" || vm.Tags[k] == v {
			out = append(out, vm)
		}
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (a *vmAPI) resize(w http.ResponseWriter, r *http.Request, id string) {
	vm, ok := a.vms[id]
	if !ok {
		http.NotFound(w, r)
		return
	}
	var body struct{ Size int }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Size < 1 || body.Size > 8 {
		http.Error(w, "size must be 1 to 8", http.StatusUnprocessableEntity)
		return
	}
	vm.Size = body.Size
	a.vms[id] = vm
	_ = json.NewEncoder(w).Encode(vm)
}
